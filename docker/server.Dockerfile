# The environment server: `openenv-mcp serve` (MCP at /mcp, control plane, health).
#
#   docker build -f docker/server.Dockerfile -t openenv-mcp/server .                     # registry base
#   docker build -f docker/server.Dockerfile --build-arg BASE_IMAGE=openenv-mcp/base:bookworm \
#       -t openenv-mcp/server .                                                           # CI (no registry)
#
# Dependencies are installed from pyproject.toml in their own layer, so editing
# the source rebuilds in seconds.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
# (These two lines are identical in every Dockerfile here, so builds share the layer.)
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/venv 2>/dev/null || { \
        apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends python3-venv >/dev/null \
        && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /usr/share/doc /usr/share/man \
        && python3 -m venv /opt/venv; }
WORKDIR /app
# Dependencies only (read from the real pyproject.toml), cached until pyproject changes.
COPY pyproject.toml README.md LICENSE /app/
RUN python3 -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
print('\n'.join(p['dependencies'] + p['optional-dependencies']['docker']))" > /tmp/requirements.txt \
    && pip install -q --no-cache-dir -r /tmp/requirements.txt && rm /tmp/requirements.txt
COPY openenv_mcp /app/openenv_mcp
COPY tool_servers /app/tool_servers
COPY envs /app/envs
COPY conformance /app/conformance
RUN pip install -q --no-cache-dir --no-deps . && rm -rf build *.egg-info
USER 65534:65534
ENV OPENENV_MCP_WORKDIR=/tmp
EXPOSE 8000
CMD ["openenv-mcp", "serve", "echo", "--host", "0.0.0.0", "--port", "8000"]
