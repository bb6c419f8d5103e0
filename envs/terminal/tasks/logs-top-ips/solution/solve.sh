#!/bin/sh
# 404s per client address, most first, ties by address.
awk '{ split($0, q, "\""); split(q[3], after, " "); if (after[1] == "404") n[$1]++ }
     END { for (ip in n) print n[ip], ip }' /app/logs/access.log \
  | sort -k1,1nr -k2,2 | head -n 5 > /app/report.txt
