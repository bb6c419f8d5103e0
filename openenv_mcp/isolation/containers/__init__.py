"""The Docker engine as the docker boundary uses it: the client, labels, reaping and removal
(:mod:`~openenv_mcp.isolation.containers.engine`) and one tool server's container
(:mod:`~openenv_mcp.isolation.containers.container`).
"""
