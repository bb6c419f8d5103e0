"""The listutil package."""
