/* topwords: count the words of stdin (letters only, lowercased) and print the N most frequent,
 * "COUNT WORD" per line, most first, ties alphabetically.   usage: topwords N */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
    char *word;
    long count;
    struct node *next;
};

static struct node *find_or_add(struct node **head, const char *word) {
    for (struct node *n = *head; n; n = n->next)
        if (strcmp(n->word, word) == 0) return n;
    struct node *n = calloc(1, sizeof *n);
    n->word = strdup(word);
    n->next = *head;
    *head = n;
    return n;
}

static int before(const struct node *a, const struct node *b) {
    return a->count > b->count || (a->count == b->count && strcmp(a->word, b->word) < 0);
}

static void free_all(struct node *head) {
    for (struct node *n = head; n; n = n->next) {
        free(n->word);
        free(n);
    }
}

int main(int argc, char **argv) {
    int top = argc > 1 ? atoi(argv[1]) : 10;
    struct node *head = NULL;
    char word[256];
    int len = 0, c;
    while ((c = getchar()) != EOF || len) {
        if (c != EOF && isalpha(c) && len < 255) {
            word[len++] = (char)tolower(c);
            continue;
        }
        if (len) {
            word[len] = '\0';
            find_or_add(&head, word)->count++;
            len = 0;
        }
        if (c == EOF) break;
    }
    struct node **items = NULL;
    long n = 0;
    for (struct node *p = head; p; p = p->next) {
        items = realloc(items, (n + 1) * sizeof *items);
        items[n++] = p;
    }
    for (long i = 1; i < n; i++)
        for (long j = i; j > 0 && before(items[j], items[j - 1]); j--) {
            struct node *t = items[j];
            items[j] = items[j - 1];
            items[j - 1] = t;
        }
    for (long i = 0; i < n && i < top; i++) printf("%ld %s\n", items[i]->count, items[i]->word);
    fflush(stdout);
    for (long i = 0; i < n; i++) free(items[i]->word);
    free(items);
    free_all(head);
    return 0;
}
