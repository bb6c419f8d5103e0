#include <stdio.h>
#include <stdlib.h>
#include "convert.h"

int main(int argc, char **argv) {
    long value = argc > 1 ? strtol(argv[1], NULL, 10) : 1;
    printf("%ld\n", to_milli(value));
    return 0;
}
