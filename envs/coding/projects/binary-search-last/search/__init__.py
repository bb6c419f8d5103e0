"""The search package."""
