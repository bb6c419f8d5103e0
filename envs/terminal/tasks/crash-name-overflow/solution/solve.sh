#!/bin/sh
# greet() copies the name into a 32-byte stack buffer: print from the name itself instead.
set -e
cd /app/greeter
python3 - <<'PY'
src = open("greeter.c").read()
src = src.replace("    char buffer[32];\n    strcpy(buffer, name);\n", "    const char *buffer = name;\n")
open("greeter.c", "w").write(src)
PY
make clean
make
python3 -c 'print("x" * 100)' | ./greeter
