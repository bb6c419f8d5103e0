"""Clients: the sync/async ``Env``, the registry behind ``make()``, remote and vector clients."""
