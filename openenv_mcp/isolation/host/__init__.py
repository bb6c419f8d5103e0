"""Host plumbing the boundaries share: how a child is launched (:mod:`~openenv_mcp.isolation.host.launch`),
per-episode uids (:mod:`~openenv_mcp.isolation.host.uids`), process trees (:mod:`~openenv_mcp.isolation.host.proctree`),
cgroups (:mod:`~openenv_mcp.isolation.host.cgroup`), a command's runtime folders
(:mod:`~openenv_mcp.isolation.host.runtime`), private folders made reachable
(:mod:`~openenv_mcp.isolation.host.exposure`) and episode workspaces (:mod:`~openenv_mcp.isolation.host.workspace`).
"""
