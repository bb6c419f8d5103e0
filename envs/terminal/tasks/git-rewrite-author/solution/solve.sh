#!/bin/sh
set -e
cd /app/repo
export FILTER_BRANCH_SQUELCH_WARNING=1
git filter-branch --force --env-filter '
if [ "$GIT_AUTHOR_EMAIL" = "kim@old-company.example" ]; then
  GIT_AUTHOR_NAME="Kim New"
  GIT_AUTHOR_EMAIL="kim@example.com"
fi' -- main
git log --format='%an <%ae>' | sort | uniq -c
