#!/bin/sh
# Build the task's repository at $1 (deterministic), including the accident: a hard reset on feature.
set -e
export GIT_AUTHOR_NAME="Sam Coder" GIT_AUTHOR_EMAIL="sam@example.com" GIT_COMMITTER_NAME="Sam Coder" GIT_COMMITTER_EMAIL="sam@example.com"
git init -q -b main "$1"
cd "$1"
git config user.name "Sam Coder"; git config user.email "sam@example.com"
n=10
commit() {
  n=$((n + 1))
  export GIT_AUTHOR_DATE="2026-02-${n}T09:30:00+00:00" GIT_COMMITTER_DATE="2026-02-${n}T09:30:00+00:00"
  git add -A && git commit -q -m "$1"
}
printf '#!/bin/sh\necho "todo: $*"\n' > todo.sh
commit "Add the todo script"
printf '# todo\n' > README.md
commit "Add a README"
git checkout -q -b feature
printf '#!/bin/sh\ncase "$1" in list) cat todo.txt ;; *) echo "$*" >> todo.txt ;; esac\n' > todo.sh
commit "Store items in todo.txt"
printf '#!/bin/sh\ncase "$1" in list) cat todo.txt ;; export) cp todo.txt "$2" ;; *) echo "$*" >> todo.txt ;; esac\n' > todo.sh
commit "Add the export command"
printf '# todo\n\n    ./todo.sh export FILE   copy the list to FILE\n' > README.md
commit "Document the export command"
git reset -q --hard HEAD~2
git checkout -q main
printf '# todo\n\nA tiny todo list.\n' > README.md
commit "Describe the project"
