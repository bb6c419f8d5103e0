#!/bin/sh
# Port 8000 is 1F40 in /proc/net/tcp; map the listening socket's inode to the process holding it.
set -e
inode=$(awk 'NR > 1 && $2 ~ /:1F40$/ && $4 == "0A" { print $10; exit }' /proc/net/tcp)
echo "socket inode: $inode"
for p in /proc/[0-9]*; do
  if ls -l "$p/fd" 2>/dev/null | grep -q "socket:\[$inode\]"; then pid=${p#/proc/}; fi
done
holder=$(tr '\0' '\n' < /proc/$pid/cmdline | sed -n 2p)
echo "pid $pid: $(tr '\0' ' ' < /proc/$pid/cmdline)"
echo "$holder" > /app/port-holder.txt
mv /etc/app/autostart.d/status.conf /etc/app/autostart.d/status.conf.disabled
kill "$pid"
printf '# orders API\nexec = /opt/app/bin/orders-api\n' > /etc/app/autostart.d/orders.conf
sleep 0.5
nohup /opt/app/bin/orders-api >/dev/null 2>&1 &
sleep 1
python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:8000/health").read())'
