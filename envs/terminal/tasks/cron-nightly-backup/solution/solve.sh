#!/bin/sh
set -e
mkdir -p /var/log/backup
touch /var/log/backup/db.log
chown -R backup:backup /var/log/backup
cat > /etc/cron.d/db-backup <<'CRON'
# Nightly database backup (output appended to its log, no mail).
MAILTO=""
SHELL=/bin/sh
PATH=/usr/sbin:/usr/bin:/sbin:/bin
30 2 * * * backup /opt/backup/backup.sh >> /var/log/backup/db.log 2>&1
CRON
chown root:root /etc/cron.d/db-backup
chmod 644 /etc/cron.d/db-backup
