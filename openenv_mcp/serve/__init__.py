"""Serving an environment: the app, its MCP face, control plane, episode manager, health, metrics, playground."""
