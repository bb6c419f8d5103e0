#include "config.h"
#include "convert.h"

long to_milli(long units) { return units * SCALE; }
