# Images of the conformance corpus: one target per third-party server, all from one shared stage.
# Built by conformance/corpus/install.sh from its cache folder (Node 22 + the npm servers copied there):
#   docker build --build-arg BASE_IMAGE=openenv-mcp/base:bookworm --target time -t openenv-mcp/corpus-time CTX
# Each image's entrypoint serves MCP over stdio on /workspace (where the episode workspace is mounted).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE} AS corpus
# (These two lines are identical in every Dockerfile here, so builds share the layer.)
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/venv 2>/dev/null || { \
        apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends python3-venv >/dev/null \
        && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /usr/share/doc /usr/share/man \
        && python3 -m venv /opt/venv; }
COPY requirements.txt /opt/corpus/requirements.txt
# one venv per PyPI server, as on the host
RUN set -e; while read -r spec; do name="${spec%%==*}"; name="${name#mcp-server-}"; \
        python3 -m venv /opt/corpus/$name; /opt/corpus/$name/bin/pip install -q --no-cache-dir $spec; \
    done < /opt/corpus/requirements.txt
COPY node /opt/corpus/node
COPY npm /opt/corpus/npm
ENV PATH=/opt/corpus/node/bin:$PATH
RUN mkdir -p /workspace && chmod 1777 /workspace
WORKDIR /workspace
USER 65534:65534

FROM corpus AS filesystem
ENTRYPOINT ["node", "/opt/corpus/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "/workspace"]

FROM corpus AS memory
ENV MEMORY_FILE_PATH=/workspace/memory.jsonl
ENTRYPOINT ["node", "/opt/corpus/npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js"]

FROM corpus AS everything
ENTRYPOINT ["node", "/opt/corpus/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]

FROM corpus AS time
ENTRYPOINT ["/opt/corpus/time/bin/mcp-server-time", "--local-timezone", "UTC"]

FROM corpus AS fetch
ENTRYPOINT ["/opt/corpus/fetch/bin/mcp-server-fetch"]

FROM corpus AS sqlite
ENTRYPOINT ["/opt/corpus/sqlite/bin/mcp-server-sqlite", "--db-path", "/workspace/db.sqlite"]
