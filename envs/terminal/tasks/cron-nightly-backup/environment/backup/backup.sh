#!/bin/sh
# Dump the (pretend) database into /var/backups/db, keeping the 7 newest dumps.
set -e
dest=/var/backups/db
stamp=$(date +%Y%m%d-%H%M%S)
printf 'dump %s\n' "$stamp" > "$dest/db-$stamp.sql"
ls -1t "$dest"/db-*.sql | tail -n +8 | xargs -r rm -f
echo "backup $stamp ok"
