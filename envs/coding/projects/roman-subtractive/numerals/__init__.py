"""The numerals package."""
