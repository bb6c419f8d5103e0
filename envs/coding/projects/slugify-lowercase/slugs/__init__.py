"""The slugs package."""
