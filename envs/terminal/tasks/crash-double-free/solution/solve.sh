#!/bin/sh
# main frees every word, then free_all frees them again (and reads n->next after free(n)).
set -e
cd /app/topwords
python3 - <<'PY'
src = open("topwords.c").read()
src = src.replace("    for (long i = 0; i < n; i++) free(items[i]->word);\n", "")
src = src.replace("""    for (struct node *n = head; n; n = n->next) {
        free(n->word);
        free(n);
    }""", """    while (head) {
        struct node *next = head->next;
        free(head->word);
        free(head);
        head = next;
    }""")
open("topwords.c", "w").write(src)
PY
make clean
make
echo "b a b" | ./topwords 2; echo "exit $?"
