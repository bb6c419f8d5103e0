#!/bin/sh
set -e
groupadd devs
usermod -aG devs alice
usermod -aG devs bob
chown -R root:devs /srv/project
find /srv/project -type d -exec chmod 2770 {} +
find /srv/project -type f -exec chmod 660 {} +
chown alice /srv/project/keys/deploy.key
chmod 600 /srv/project/keys/deploy.key
