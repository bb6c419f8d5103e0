#ifndef CONVERT_H
#define CONVERT_H
long to_milli(long units);
#endif
