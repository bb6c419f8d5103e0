"""The core: environment specs, tasks, validation, workspaces, episodes (the one dispatch path), rewards."""
