"""The games package."""
