#!/bin/sh
set -e
cat > /etc/kv/kv.conf <<'CONF'
# Key-value service configuration.
[server]
bind = 127.0.0.1
port = 8765

[storage]
data_dir = /var/lib/kv
CONF
mkdir -p /var/lib/kv
chown kv:kv /var/lib/kv
chmod 750 /var/lib/kv
/opt/kv/start.sh
for i in 1 2 3 4 5 6 7 8 9 10; do
  python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:8765/health", timeout=1)' 2>/dev/null && break
  sleep 0.5
done
python3 - <<'PY'
import urllib.request
req = urllib.request.Request("http://127.0.0.1:8765/kv/color", data=b"blue", method="PUT")
print(urllib.request.urlopen(req, timeout=3).read().decode())
PY
