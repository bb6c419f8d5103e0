#include <string.h>
#include "ops.h"

int apply_op(const char *op, long a, long b, long *out) {
    if (strcmp(op, "add") == 0) { *out = a + b; return 0; }
    if (strcmp(op, "sub") == 0) { *out = a - b; return 0; }
    if (strcmp(op, "mul") == 0) { *out = a * b; return 0; }
    if (strcmp(op, "div") == 0 && b != 0) { *out = a / b; return 0; }
    return 1;
}
