"""Reproducible benchmarks; ``make bench`` (``python -m bench [NAME...]``) runs them all."""
