#!/usr/bin/env bash
# The plain-machine check: `make test` on a machine with only Python >= 3.11 and make (no bubblewrap,
# Docker, PostgreSQL, Node or Chromium) must pass, every test that needs a missing engine skipping with
# a reason that says what to install (openenv_mcp.testing.need).
#
# It builds that machine as a Docker container from a Debian bookworm image (default: the local
# openenv-mcp/base:bookworm that .ci/docker-setup.sh builds; any bookworm/trixie image works), installs
# only python3-venv and make with apt, copies a clean `git clone` of the commit in (never this work tree
# with its .venv), and runs `make test` in it, limited to 1 CPU and 6 GB so it does not starve the host.
#
#   bash .ci/plain-machine.sh [REF] [LOG]     # REF: commit to test (default HEAD),
#                                             # LOG: where the output goes (default /tmp/plain-make-test.log)
#   PLAIN_IMAGE=debian:bookworm-slim PYTEST_ARGS='-x tests/test_x.py' bash .ci/plain-machine.sh
#
# The tests run as an unprivileged user, as on a developer's laptop (PLAIN_USER=root runs them as root:
# then the process boundary refuses tool servers under private folders such as pytest's
# /tmp/pytest-of-root unless bubblewrap is there to expose them, by design).
# The host only needs git and a Docker engine. Not called from .ci/run (it takes minutes): run it by hand.
# If the host has local wheel mirrors (/opt/wheels, /opt/pypi*, /etc/xdg/pip, as on the dev machines),
# they are mounted read-only and used as pip uses them on the host; otherwise pip uses PyPI, and torch
# comes from the CPU index. A pip cache in /var/cache/openenv-plain-pip makes reruns quicker.
set -euo pipefail
cd "$(dirname "$0")/.."
REF=${1:-HEAD}
LOG=${2:-/tmp/plain-make-test.log}
IMAGE=${PLAIN_IMAGE:-openenv-mcp/base:bookworm}
SRC=$(mktemp -d /tmp/openenv-plain.XXXXXX)
trap 'rm -rf "$SRC"' EXIT
git clone -q --no-local . "$SRC/repo"
git -C "$SRC/repo" checkout -q --detach "$(git rev-parse "$REF")"

USER_NAME=${PLAIN_USER:-dev}
mounts=(-v "$SRC/repo:/src:ro" -v /var/cache/openenv-plain-pip:/var/cache/pip)
envs=(-e "PYTEST_ARGS=${PYTEST_ARGS:--rs}" -e DEBIAN_FRONTEND=noninteractive -e PIP_CACHE_DIR=/var/cache/pip
  -e "PLAIN_USER=$USER_NAME")
if [ -d /opt/wheels ]; then
  for d in /opt/wheels /opt/pypi /opt/pypi-more /etc/xdg/pip; do
    [ -e "$d" ] && mounts+=(-v "$d:$d:ro")
  done
  envs+=(-e PIP_FIND_LINKS=/opt/wheels -e PIP_CONSTRAINT=/etc/xdg/pip/constraints.txt
    -e "PIP_EXTRA_INDEX_URL=file:///opt/pypi/simple file:///opt/pypi-more/simple" -e PIP_DEFAULT_TIMEOUT=180)
else
  envs+=(-e "TORCH_PIP=torch --index-url https://download.pytorch.org/whl/cpu")
fi
mkdir -p /var/cache/openenv-plain-pip

echo "plain machine: $IMAGE, commit $(git rev-parse --short "$REF"), log $LOG"
set -o pipefail
docker run --rm --cpus=1 --memory=6g "${mounts[@]}" "${envs[@]}" "$IMAGE" bash -euo pipefail -c '
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends python3 python3-venv make ca-certificates >/dev/null
  for engine in bwrap docker dockerd postgres initdb node npm chromium; do
    if command -v "$engine" >/dev/null; then echo "not a plain machine: $engine is installed" >&2; exit 1; fi
  done
  if [ "$PLAIN_USER" = root ]; then home=/root; else useradd -m "$PLAIN_USER"; home=/home/$PLAIN_USER; fi
  cp -a /src "$home/work" && chown -R "$PLAIN_USER:" "$home/work" && chmod -R a+rwX /var/cache/pip
  cd "$home/work"
  setpriv --reuid="$PLAIN_USER" --regid="$PLAIN_USER" --init-groups env HOME="$home" \
    make test PYTEST_ARGS="$PYTEST_ARGS"
' 2>&1 | tee "$LOG"
