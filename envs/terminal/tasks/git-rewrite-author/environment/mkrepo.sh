#!/bin/sh
# Build the task's repository at $1 (deterministic): three authors, one with an old address.
set -e
git init -q -b main "$1"
cd "$1"
git config user.name "Robin Builder"; git config user.email "robin@example.com"
n=0
commit() {
  n=$((n + 1))
  GIT_AUTHOR_NAME="$1"; GIT_AUTHOR_EMAIL="$2"
  GIT_AUTHOR_DATE="2026-04-$(printf %02d $n)T08:00:00+02:00"
  GIT_COMMITTER_NAME="Robin Builder"; GIT_COMMITTER_EMAIL="robin@example.com"
  GIT_COMMITTER_DATE="2026-04-$(printf %02d $n)T09:00:00+02:00"
  export GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_AUTHOR_DATE GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL GIT_COMMITTER_DATE
  git add -A && git commit -q -m "$3"
}
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
  echo "line $i" >> log.txt
  case $((i % 3)) in
    0) commit "Kim Old" "kim@old-company.example" "Kim's change $i" ;;
    1) commit "Robin Builder" "robin@example.com" "Robin's change $i" ;;
    2) commit "Pat Other" "pat@example.com" "Pat's change $i" ;;
  esac
done
