#!/bin/sh
# The library must come after the objects that use it on the link line, and it needs libm (hypot).
set -e
cd /app/geo
sed -i 's|\t$(CC) $(CFLAGS) -Llib -lgeom -o $@ app/main.c|\t$(CC) $(CFLAGS) -o $@ app/main.c -Llib -lgeom -lm|' Makefile
make clean
make
bin/perimeter 0 0 3 0 3 4
