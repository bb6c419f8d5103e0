#ifndef GEOM_H
#define GEOM_H
double distance(double x1, double y1, double x2, double y2);
double polygon_perimeter(const double *xs, const double *ys, int n);
#endif
