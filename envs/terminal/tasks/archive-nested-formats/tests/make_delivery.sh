#!/bin/sh
# Build the nested delivery OUT/delivery.tar.xz and the expected EXPECTED csv (deterministic: fixed
# times, sorted members, no owners).   make_delivery.sh OUT EXPECTED
set -e
out=${1:-/srv/inbox}
expected=${2:-/dev/null}
work=$(mktemp -d)
cd "$work"
python3 - <<'PY'
import random
rng = random.Random(99)
with open("measurements.csv", "w") as out:
    out.write("station,day,temp_c\n")
    for i in range(2000):
        out.write(f"S{rng.randrange(1, 20):02d},2026-01-{rng.randrange(1, 29):02d},{rng.uniform(-20, 35):.1f}\n")
PY
sha256sum measurements.csv > SHA256SUMS
zstd -q -19 measurements.csv -o measurements.csv.zst
touch -d '2026-01-01 00:00:00 UTC' measurements.csv.zst SHA256SUMS
zip -q -X inner.zip measurements.csv.zst SHA256SUMS
printf 'read me first\n' > README.txt
bzip2 -9 README.txt
touch -d '2026-01-01 00:00:00 UTC' inner.zip README.txt.bz2
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2026-01-01 UTC' -cf payload.tar inner.zip README.txt.bz2
mkdir -p "$out"
xz -9 -c payload.tar > "$out/delivery.tar.xz"
cp measurements.csv "$expected"
cd /
rm -rf "$work"
