#!/bin/sh
# Make /srv/backups: a level-0 backup of /data/docs on Monday, incrementals Tuesday-Thursday (GNU tar
# --listed-incremental), with files added, changed and deleted in between. Deterministic contents.
set -e
out=${1:-/srv/backups}
work=$(mktemp -d)
mkdir -p "$work/docs/reports" "$out"
cd "$work"
snap="$work/snapshot"
printf 'plan v1\n' > docs/plan.txt
printf 'q1 numbers\n' > docs/reports/q1.txt
printf 'scratch\n' > docs/scratch.txt
tar --listed-incremental="$snap" --owner=0 --group=0 -czf "$out/docs-1-mon-full.tar.gz" docs
sleep 1
printf 'plan v2\n' > docs/plan.txt
printf 'q2 numbers\n' > docs/reports/q2.txt
tar --listed-incremental="$snap" --owner=0 --group=0 -czf "$out/docs-2-tue-incr.tar.gz" docs
sleep 1
rm docs/scratch.txt
printf 'meeting notes\n' > docs/notes.txt
tar --listed-incremental="$snap" --owner=0 --group=0 -czf "$out/docs-3-wed-incr.tar.gz" docs
sleep 1
printf 'plan v3 (draft, wrong)\n' > docs/plan.txt
rm docs/reports/q1.txt
tar --listed-incremental="$snap" --owner=0 --group=0 -czf "$out/docs-4-thu-incr.tar.gz" docs
cd /
rm -rf "$work"
