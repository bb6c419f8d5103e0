"""The timeparse package."""
