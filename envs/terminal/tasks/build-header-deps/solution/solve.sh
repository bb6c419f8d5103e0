#!/bin/sh
# Let the compiler write each object's header dependencies (-MMD -MP) and include them.
set -e
cd /app/units
cat > Makefile <<'MK'
CC = gcc
CFLAGS = -O2 -Wall
OBJS = build/main.o build/convert.o build/banner.o

units: $(OBJS)
	$(CC) $(CFLAGS) -o $@ $(OBJS)

build/%.o: src/%.c
	@mkdir -p build
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

-include $(OBJS:.o=.d)

clean:
	rm -rf build units

.PHONY: clean
MK
make clean
make
./units 3
