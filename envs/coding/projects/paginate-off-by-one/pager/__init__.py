"""The pager package."""
