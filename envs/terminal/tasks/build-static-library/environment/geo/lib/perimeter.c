#include "geom.h"

double polygon_perimeter(const double *xs, const double *ys, int n) {
    double total = 0;
    for (int i = 0; i < n; i++) total += distance(xs[i], ys[i], xs[(i + 1) % n], ys[(i + 1) % n]);
    return total;
}
