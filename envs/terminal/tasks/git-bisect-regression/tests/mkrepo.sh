#!/bin/sh
# Build the task's repository at $1 (deterministic): 40 commits, one of them (the 27th) breaks
# `./total.sh`, which should print the sum of the numbers in data.txt.
set -e
export GIT_AUTHOR_NAME="Lee Ops" GIT_AUTHOR_EMAIL="lee@example.com" GIT_COMMITTER_NAME="Lee Ops" GIT_COMMITTER_EMAIL="lee@example.com"
git init -q -b main "$1"
cd "$1"
git config user.name "Lee Ops"; git config user.email "lee@example.com"
i=0
while [ $i -lt 40 ]; do
  i=$((i + 1))
  day=$(( (i - 1) % 28 + 1 )); month=$(( (i - 1) / 28 + 3 ))
  GIT_AUTHOR_DATE="2026-0${month}-$(printf %02d $day)T12:00:00+00:00"
  GIT_COMMITTER_DATE="$GIT_AUTHOR_DATE"
  export GIT_AUTHOR_DATE GIT_COMMITTER_DATE
  echo "$i" >> data.txt
  if [ $i -lt 27 ]; then
    printf '#!/bin/sh\n# The sum of the numbers in data.txt (version %s).\nawk '"'"'{ s += $1 } END { print s }'"'"' data.txt\n' "$i" > total.sh
  else
    printf '#!/bin/sh\n# The sum of the numbers in data.txt (version %s).\nawk '"'"'NR > 1 { s += $1 } END { print s + 0 }'"'"' data.txt\n' "$i" > total.sh
  fi
  chmod 755 total.sh
  printf 'notes for change %s\n' "$i" > "notes-$((i % 5)).txt"
  git add -A
  git commit -q -m "Change $i: update data and notes"
done
git tag v0.1 HEAD~35
