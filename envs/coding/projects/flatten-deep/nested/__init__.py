"""The nested package."""
