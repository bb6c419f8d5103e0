"""wordfreq: count words, skipping common stop words."""

__version__ = "0.3.1"
