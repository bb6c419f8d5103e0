"""Worlds: the framework code of environments worth training on, one subpackage each.

A world's environment folders (``env.toml``, tasks, solutions) live in the repository's top-level
``envs/`` (shipped as ``openenv_mcp.envs``); what makes them run is here: :mod:`.harbor` reads
Harbor and Terminal-Bench task folders and runs each task's container as an episode.
"""
