"""The framework code of the built-in worlds, one subpackage per world (``openenv_mcp/worlds/<world>/``).

The environment folders themselves (env.toml, tasks, reward modules, solutions) live in the
repository's top-level ``envs/<name>/`` (shipped as ``openenv_mcp.envs``). :mod:`.harbor` reads Harbor
and Terminal-Bench task folders and runs each task's container as an episode.
"""
