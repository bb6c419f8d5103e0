#!/bin/bash
set -euo pipefail
cd /etc
find myapp -path myapp/cache -prune -o -type f -name '*.conf' -print0 \
  | tar --null -czf /app/backup/myapp-conf.tar.gz --files-from=-
tar -tzf /app/backup/myapp-conf.tar.gz
