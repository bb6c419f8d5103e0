#!/bin/sh
set -e
crontab -l -u www > /tmp/www.crontab
sed -i -e 's|^\* \* \* \* \* /srv/www/bin/report|*/15 9-17 * * 1-5 /srv/www/bin/report|' \
       -e 's|^0 23 \* \* 1 /srv/www/bin/cleanup-uploads|0 23 * * 0 /srv/www/bin/cleanup-uploads|' /tmp/www.crontab
crontab -u www /tmp/www.crontab
crontab -l -u www
