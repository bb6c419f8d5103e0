"""The shop package."""
