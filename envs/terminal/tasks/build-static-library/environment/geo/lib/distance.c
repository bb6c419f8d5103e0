#include <math.h>
#include "geom.h"

double distance(double x1, double y1, double x2, double y2) { return hypot(x2 - x1, y2 - y1); }
