"""The isolation boundaries, one a module: :mod:`~openenv_mcp.isolation.boundaries.inprocess`,
:mod:`~openenv_mcp.isolation.boundaries.process`, :mod:`~openenv_mcp.isolation.boundaries.sandbox`
(bubblewrap), :mod:`~openenv_mcp.isolation.boundaries.docker` and :mod:`~openenv_mcp.isolation.boundaries.remote`.
Each implements :class:`openenv_mcp.isolation.base.Connection`; :func:`openenv_mcp.isolation.connect` picks one.
"""
