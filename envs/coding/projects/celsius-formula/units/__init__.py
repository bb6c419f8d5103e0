"""The units package."""
