#!/bin/sh
set -e
cd /app/repo
export FILTER_BRANCH_SQUELCH_WARNING=1
git filter-branch --force --index-filter 'git rm -q --cached --ignore-unmatch config/secrets.env' \
  --tag-name-filter cat -- --all
# Drop the backup refs and every unreachable object that still holds the secret.
git for-each-ref --format='%(refname)' refs/original/ | xargs -r -n 1 git update-ref -d
git reflog expire --expire=now --all
git gc --quiet --prune=now --aggressive
git log --oneline --all
