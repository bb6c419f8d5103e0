"""What an environment IS, before anything runs: env files (:mod:`~openenv_mcp.definitions.spec`),
task lists and task sets (:mod:`~openenv_mcp.definitions.tasks`, dataset-backed ones in
:mod:`~openenv_mcp.definitions.taskdata`), and the bounded surface text an environment shows
(:mod:`~openenv_mcp.definitions.surface`). Imports nothing but the base modules; isolation and everything
above build on it.
"""
