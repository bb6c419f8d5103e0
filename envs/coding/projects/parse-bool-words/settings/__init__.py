"""The settings package."""
