"""The reference environments, one folder each (``env.toml`` and its data), installed as ``openenv_mcp.envs``."""
