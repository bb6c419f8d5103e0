"""The wordstats package."""
