#!/bin/sh
set -e
work=$(mktemp -d)
cd "$work"
xz -dc /srv/inbox/delivery.tar.xz | tar -xf -
unzip -q inner.zip
zstd -q -d measurements.csv.zst -o measurements.csv
sha256sum -c SHA256SUMS
mkdir -p /app/data
cp measurements.csv /app/data/measurements.csv
echo $(( $(wc -l < measurements.csv) - 1 )) > /app/data/rows.txt
cat /app/data/rows.txt
