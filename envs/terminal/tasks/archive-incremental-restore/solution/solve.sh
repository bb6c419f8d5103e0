#!/bin/sh
# Extract the full backup, then each incremental up to Wednesday's, in order, with
# --listed-incremental=/dev/null so that tar also applies the deletions each one records.
set -e
mkdir -p /app/restore
cd /app/restore
for b in docs-1-mon-full docs-2-tue-incr docs-3-wed-incr; do
  tar --listed-incremental=/dev/null -xzf /srv/backups/$b.tar.gz
done
find /app/restore/docs -type f | sort
