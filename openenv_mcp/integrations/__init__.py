"""Adapters for training stacks: TRL (:mod:`.trl`) and Gymnasium (:mod:`.gymnasium`).

Each adapter is an optional extra (``pip install 'openenv-mcp[trl]'`` or
``'openenv-mcp[gymnasium]'``) and is imported on its own; importing this
package imports neither.
"""
