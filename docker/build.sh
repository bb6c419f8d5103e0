#!/usr/bin/env bash
# Build the project's images (cached layers: a rebuild after a source edit takes seconds).
#
#   docker/build.sh            # openenv-mcp/tools and openenv-mcp/server
#   docker/build.sh tools      # only one
#   BASE_IMAGE=python:3.11-slim docker/build.sh
#
# BASE_IMAGE defaults to the locally built openenv-mcp/base:bookworm when it
# exists (no registry needed, see .ci/docker-setup.sh), else python:3.11-slim.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${BASE_IMAGE:-}" ]]; then
  if docker image inspect openenv-mcp/base:bookworm >/dev/null 2>&1; then
    BASE_IMAGE=openenv-mcp/base:bookworm
  else
    BASE_IMAGE=python:3.11-slim
  fi
fi
targets=("$@")
((${#targets[@]})) || targets=(tools server)
for target in "${targets[@]}"; do
  [[ -f "docker/$target.Dockerfile" ]] || { echo "build.sh: no docker/$target.Dockerfile" >&2; exit 2; }
  echo "build.sh: openenv-mcp/$target (BASE_IMAGE=$BASE_IMAGE)" >&2
  DOCKER_BUILDKIT=0 docker build -q -f "docker/$target.Dockerfile" --build-arg "BASE_IMAGE=$BASE_IMAGE" \
    -t "openenv-mcp/$target" . >/dev/null 2>"${TMPDIR:-/tmp}/openenv-mcp-build-$target.log" \
    || { tail -30 "${TMPDIR:-/tmp}/openenv-mcp-build-$target.log" >&2; exit 1; }
done
