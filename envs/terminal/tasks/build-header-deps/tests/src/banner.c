#include <stdio.h>

void banner(void) { puts("units"); }
