"""Helpers shared by this repository's tests (imported as ``support.NAME``; never from ``conftest``)."""
