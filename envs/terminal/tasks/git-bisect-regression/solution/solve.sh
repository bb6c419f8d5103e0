#!/bin/sh
set -e
cd /app/repo
cat > /tmp/good.sh <<'SH'
#!/bin/sh
want=$(awk '{ s += $1 } END { print s }' data.txt)
[ "$(./total.sh)" = "$want" ]
SH
chmod 755 /tmp/good.sh
git bisect start main v0.1
git bisect run /tmp/good.sh
git rev-parse refs/bisect/bad > /app/first-bad.txt
git bisect reset
cat /app/first-bad.txt
