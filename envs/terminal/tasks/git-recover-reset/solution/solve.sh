#!/bin/sh
set -e
cd /app/repo
git reflog show feature
lost=$(git reflog show --format='%H %s' feature | awk '$0 ~ / Document the export command$/ { print $1; exit }')
git branch -f feature "$lost"
git log --oneline feature
