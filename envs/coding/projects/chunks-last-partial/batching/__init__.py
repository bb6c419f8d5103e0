"""The batching package."""
