# Reference MCP tool servers (tool_servers/: echo, filesystem, shell, python, sql) in one image,
# as openenv_mcp.tool_servers (the framework itself is not installed here).
#
#   docker build -f docker/tools.Dockerfile -t openenv-mcp/tools .                       # registry base
#   docker build -f docker/tools.Dockerfile --build-arg BASE_IMAGE=openenv-mcp/base:bookworm \
#       -t openenv-mcp/tools .                                                            # CI (no registry)
#
# The default command serves the echo server over stdio (`isolation = "docker"`,
# `image = "openenv-mcp/tools"`); any other server is a command, e.g.
# `python -m openenv_mcp.tool_servers.filesystem --root /workspace`. Runs as an unprivileged user; /workspace is
# where the episode workspace is mounted.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
# (These two lines are identical in every Dockerfile here, so builds share the layer.)
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/venv 2>/dev/null || { \
        apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends python3-venv >/dev/null \
        && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /usr/share/doc /usr/share/man \
        && python3 -m venv /opt/venv; }
# A venv needs ensurepip: Debian's python3-minimal base lacks it, python:*-slim has it.
RUN pip install -q --no-cache-dir "fastmcp>=4.2,<5" "mcp>=2.3,<3" "google-re2>=1.1"
ENV PYTHONPATH=/app
COPY openenv_mcp/__init__.py /app/openenv_mcp/__init__.py
COPY tool_servers /app/openenv_mcp/tool_servers
RUN mkdir -p /workspace && chmod 1777 /workspace
WORKDIR /workspace
USER 65534:65534
CMD ["python", "-m", "openenv_mcp.tool_servers.echo"]
