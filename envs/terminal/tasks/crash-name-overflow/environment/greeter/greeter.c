/* greeter: read one name per line on stdin, print "Hello, NAME! (N letters)" for each.
 * Names may be up to 1000 bytes long; blank lines are skipped. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

static void greet(const char *name) {
    char buffer[32];
    strcpy(buffer, name);
    int letters = 0;
    for (const char *p = buffer; *p; p++)
        if (isalpha((unsigned char)*p)) letters++;
    printf("Hello, %s! (%d letters)\n", buffer, letters);
}

int main(void) {
    char line[2048];
    while (fgets(line, sizeof line, stdin) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '\0') continue;
        greet(line);
    }
    return 0;
}
