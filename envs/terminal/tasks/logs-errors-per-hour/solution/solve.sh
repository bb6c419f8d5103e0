#!/bin/sh
set -e
cd /var/log/myapp
{ for f in app.log*; do case "$f" in *.gz) gzip -dc "$f" ;; *) cat "$f" ;; esac; done; } \
  | grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z \[ERROR\]' \
  | cut -c1-13 | sort | uniq -c \
  | awk 'BEGIN { print "hour,errors" } { print $2 "," $1 }' > /app/errors.csv
head -3 /app/errors.csv
