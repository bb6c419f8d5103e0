"""The dates package."""
