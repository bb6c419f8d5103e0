/* perimeter X1 Y1 X2 Y2 ...: the perimeter of the polygon through the points, 3 decimals. */
#include <stdio.h>
#include <stdlib.h>
#include "geom.h"

int main(int argc, char **argv) {
    int n = (argc - 1) / 2;
    if (n < 2 || (argc - 1) % 2) {
        fprintf(stderr, "usage: perimeter X1 Y1 X2 Y2 [...]\n");
        return 2;
    }
    double xs[64], ys[64];
    if (n > 64) n = 64;
    for (int i = 0; i < n; i++) {
        xs[i] = atof(argv[1 + 2 * i]);
        ys[i] = atof(argv[2 + 2 * i]);
    }
    printf("%.3f\n", polygon_perimeter(xs, ys, n));
    return 0;
}
