#ifndef CONFIG_H
#define CONFIG_H
#define SCALE 1000
#endif
