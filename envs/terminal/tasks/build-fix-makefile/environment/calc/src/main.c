#include <stdio.h>
#include <stdlib.h>
#include "ops.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: calc A OP B   (OP: add sub mul div)\n");
        return 2;
    }
    long a = strtol(argv[1], NULL, 10), b = strtol(argv[3], NULL, 10);
    long out;
    if (apply_op(argv[2], a, b, &out) != 0) {
        fprintf(stderr, "calc: bad operation or division by zero\n");
        return 1;
    }
    printf("%ld\n", out);
    return 0;
}
