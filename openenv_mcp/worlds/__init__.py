"""Worlds: the framework code of environments worth training on (one subpackage each).

An environment's folder (``envs/<name>/``: env.toml, tasks, reward, solutions) holds what is
particular to its tasks; the code a world's environments share lives here, e.g.
:mod:`openenv_mcp.worlds.browser` (the web applications' runner, their state channel to the
grader, the Playwright MCP configuration and the snapshot reader reference solutions use).
"""
