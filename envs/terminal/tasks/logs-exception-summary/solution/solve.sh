#!/bin/sh
# Remember the last "Type: message" line of each failure; count it when the next entry starts.
awk '
  /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] / { if (pending != "") n[pending]++; pending = ""; next }
  /^[A-Za-z_][A-Za-z0-9_.]*: / { sub(/:.*/, ""); pending = $0 }
  END { if (pending != "") n[pending]++; for (t in n) print n[t], t }
' /var/log/worker/worker.log | sort -k1,1nr -k2,2 > /app/exceptions.txt
cat /app/exceptions.txt
