"""The reports package."""
