"""``openenv_mcp.gym.GymEnv``: environments as ``gymnasium.Env`` (needs ``pip install 'openenv-mcp[gymnasium]'``).

Importing this module registers every environment with Gymnasium as
``openenv_mcp/<name>-v0``. The adapter lives in :mod:`openenv_mcp.integrations.gymnasium`.
"""

from openenv_mcp.integrations.gymnasium import GymEnv, GymVectorEnv, UnicodeText, register_envs

__all__ = ["GymEnv", "GymVectorEnv", "UnicodeText", "register_envs"]
