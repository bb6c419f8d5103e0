# An image with no Python at all (a shell MCP server as its entrypoint), for the conformance tests:
# the containment probes must work on any server image, probing from outside the container.
#
#   docker/build.sh nopython
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
RUN rm -rf /usr/bin/python3* /usr/local/bin/python3* /usr/lib/python3* /usr/local/lib/python3* /opt/venv \
    && ! command -v python3
COPY conformance/fixtures/envs/nopython/server.sh /usr/local/bin/mcp-hello
WORKDIR /workspace
USER 65534:65534
CMD ["/usr/local/bin/mcp-hello"]
