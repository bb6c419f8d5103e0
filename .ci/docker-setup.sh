#!/usr/bin/env bash
# Docker for the isolation tests, idempotent: install the engine, start dockerd
# if it is not running, and build the local base image when it is missing.
#
# No container registry is reachable in CI, so the base image is made from
# Debian packages (debootstrap, minbase + python3-minimal) and `docker import`ed.
# Users with a registry can skip this and build the Dockerfiles with
# `--build-arg BASE_IMAGE=python:3.11-slim`.
#
#   .ci/docker-setup.sh               # install + start + base image
#   BASE_IMAGE=name .ci/docker-setup.sh
set -euo pipefail
BASE_IMAGE="${BASE_IMAGE:-openenv-mcp/base:bookworm}"
SUITE="${SUITE:-bookworm}"
LOG="${DOCKERD_LOG:-/var/log/openenv-mcp-dockerd.log}"
export DEBIAN_FRONTEND=noninteractive

say() { echo "docker-setup: $*" >&2; }

# 1. Packages (docker.io engine, debootstrap for the base image, compose v1).
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v docker-compose >/dev/null || missing+=(docker-compose)
if ((${#missing[@]})); then
  say "installing ${missing[*]}"
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
    apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  }
fi

# 2. The engine: start dockerd in the background unless one already answers.
if ! docker info >/dev/null 2>&1; then
  say "starting dockerd (log: $LOG)"
  nohup dockerd >"$LOG" 2>&1 </dev/null &
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    sleep 0.25
  done
  docker info >/dev/null 2>&1 || { tail -20 "$LOG" >&2; say "dockerd did not come up"; exit 1; }
fi

# 3. The base image, only if missing (or built by an older version of this script).
BASE_VERSION=3
have="$(docker image inspect -f '{{index .Config.Labels "openenv-mcp.base-version"}}' "$BASE_IMAGE" 2>/dev/null || true)"
if [[ "$have" != "$BASE_VERSION" ]]; then
  # The Debian mirror apt already uses (the first URI may be another vendor's repo).
  MIRROR="${MIRROR:-$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null \
            | grep -E '^[[:space:]]*(URIs:|deb )' | grep -oE 'https?://[^ ]+' \
            | grep -E '/debian/?$' | head -n1 || true)}"
  MIRROR="${MIRROR:-http://deb.debian.org/debian}"
  ROOTFS="$(mktemp -d /tmp/openenv-mcp-rootfs.XXXXXX)"
  trap 'rm -rf "$ROOTFS"' EXIT
  say "building $BASE_IMAGE from $MIRROR ($SUITE, minbase + python3-minimal)"
  debootstrap --variant=minbase --include=python3-minimal "$SUITE" "$ROOTFS" "$MIRROR" >"$ROOTFS.log" 2>&1 \
    || { tail -20 "$ROOTFS.log" >&2; say "debootstrap failed (set MIRROR=...)"; exit 1; }
  rm -f "$ROOTFS.log"
  rm -rf "$ROOTFS"/usr/share/{doc,man,info,locale,lintian,linda} \
         "$ROOTFS"/var/cache/apt/* "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/log/*.log \
         "$ROOTFS"/var/cache/debconf/*-old "$ROOTFS"/tmp/* 2>/dev/null || true
  # The host's trust store, so pip inside image builds trusts what the host trusts
  # (a TLS-intercepting proxy's CA included).
  # (Its own path: installing Debian's ca-certificates in an image regenerates the usual bundle.)
  mkdir -p "$ROOTFS/usr/local/share/openenv-mcp"
  cp /etc/ssl/certs/ca-certificates.crt "$ROOTFS/usr/local/share/openenv-mcp/host-ca.crt"
  tar -C "$ROOTFS" -c . | docker import \
      -c "LABEL openenv-mcp.base-version=$BASE_VERSION" \
      -c 'ENV SSL_CERT_FILE=/usr/local/share/openenv-mcp/host-ca.crt' \
      -c 'ENV PIP_CERT=/usr/local/share/openenv-mcp/host-ca.crt' \
      -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      -c 'ENV LANG=C.UTF-8' \
      -c 'CMD ["python3"]' - "$BASE_IMAGE" >/dev/null
  say "built $BASE_IMAGE ($(docker image inspect -f '{{.Size}}' "$BASE_IMAGE" | awk '{printf "%d MB", $1/1e6}'))"
fi
