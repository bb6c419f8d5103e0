#!/bin/sh
# Start the key-value service in the background as the user kv.
nohup setpriv --reuid=kv --regid=kv --init-groups -- python3 /opt/kv/server.py --config /etc/kv/kv.conf \
    >> /var/log/kv.log 2>&1 &
echo "kv started (log: /var/log/kv.log)"
