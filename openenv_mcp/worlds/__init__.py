"""The framework code of the built-in worlds, one subpackage per world (``openenv_mcp/worlds/<world>/``).

The environment folders themselves (env.toml, tasks, reward modules, solutions) live in the
repository's top-level ``envs/<name>/`` (shipped as ``openenv_mcp.envs``); the code a world's
environments share lives here: :mod:`openenv_mcp.worlds.harbor` reads Harbor and Terminal-Bench
task folders and runs each task's container as an episode; :mod:`openenv_mcp.worlds.browser` runs
the web applications, their state channel to the grader, the Playwright MCP configuration and the
snapshot reader reference solutions use.
"""
