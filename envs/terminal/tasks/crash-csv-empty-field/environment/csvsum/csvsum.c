/* csvsum: sum a numeric column of a CSV file.
 *
 *   csvsum FILE COLUMN     COLUMN is a header name; prints "rows=N sum=S" (S with 2 decimals)
 *
 * Empty cells count as 0. Lines are at most 4095 characters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 64

/* Split line in place at commas; fields[i] points at each field (an empty field is ""). */
static int split(char *line, char **fields) {
    int n = 0;
    memset(fields, 0, MAX_FIELDS * sizeof *fields);
    char *token = strtok(line, ",\r\n");
    while (token != NULL && n < MAX_FIELDS) {
        fields[n++] = token;
        token = strtok(NULL, ",\r\n");
    }
    return n;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: csvsum FILE COLUMN\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "r");
    if (in == NULL) {
        perror(argv[1]);
        return 1;
    }
    char line[4096];
    char *fields[MAX_FIELDS];
    if (fgets(line, sizeof line, in) == NULL) {
        fprintf(stderr, "csvsum: empty file\n");
        return 1;
    }
    int n = split(line, fields), column = -1;
    for (int i = 0; i < n; i++)
        if (strcmp(fields[i], argv[2]) == 0) column = i;
    if (column < 0) {
        fprintf(stderr, "csvsum: no column %s\n", argv[2]);
        return 1;
    }
    long rows = 0;
    double sum = 0;
    while (fgets(line, sizeof line, in) != NULL) {
        split(line, fields);
        sum += atof(fields[column]);
        rows++;
    }
    printf("rows=%ld sum=%.2f\n", rows, sum);
    fclose(in);
    return 0;
}
