#!/bin/sh
set -e
cd /app/calc
cat > Makefile <<'MK'
CC = gcc
CFLAGS = -O2 -Wall -Isrc
OBJS = build/main.o build/ops.o

all: calc

calc: $(OBJS)
	$(CC) $(CFLAGS) -o $@ $(OBJS)

build/%.o: src/%.c src/ops.h
	mkdir -p build
	$(CC) $(CFLAGS) -c $< -o $@

clean:
	rm -rf build calc

.PHONY: all clean
MK
make clean
make
./calc 6 mul 7
