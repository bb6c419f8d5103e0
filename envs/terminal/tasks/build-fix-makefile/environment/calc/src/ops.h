#ifndef OPS_H
#define OPS_H
int apply_op(const char *op, long a, long b, long *out);
#endif
