#!/bin/sh
set -e
cd /app
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2024-01-01 00:00:00 UTC' \
    --exclude='*.tmp' -cf - site | gzip -n > /app/dist/site.tar.gz
tar -tvzf /app/dist/site.tar.gz | head
