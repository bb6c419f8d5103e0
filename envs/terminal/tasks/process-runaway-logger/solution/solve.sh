#!/bin/sh
# Who writes flood.log? Look at the open files of every process.
for p in /proc/[0-9]*; do
  if ls -l "$p/fd" 2>/dev/null | grep -q flood.log; then ps -o pid=,args= -p "${p#/proc/}"; fi
done
ps -eo pid,args | grep '[r]eport-cache'
echo /opt/app/bin/report-cache > /app/culprit.txt
mv /etc/app/autostart.d/warmer.conf /etc/app/autostart.d/warmer.conf.disabled
pkill -f /opt/app/bin/report-cache || true
sleep 0.2
: > /var/log/app/flood.log
