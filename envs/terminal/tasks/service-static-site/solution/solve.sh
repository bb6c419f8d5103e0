#!/bin/sh
set -e
cat > /etc/webd/webd.ini <<'INI'
[http]
listen = 127.0.0.1:8080

[site]
root = /srv/docs
index = home.html

[types]
svg = image/svg+xml
INI
nohup setpriv --reuid=www-data --regid=www-data --init-groups python3 /opt/webd/webd.py --config /etc/webd/webd.ini >/dev/null 2>&1 &
sleep 1
python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:8080/").read()[:60])'
