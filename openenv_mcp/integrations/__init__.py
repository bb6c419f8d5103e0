"""Adapters for training stacks: TRL (:mod:`openenv_mcp.integrations.trl`) and Gymnasium (:mod:`openenv_mcp.integrations.gymnasium`).

Each adapter is an optional extra (``pip install 'openenv-mcp[trl]'`` or
``'openenv-mcp[gymnasium]'``) and is imported on its own; importing this
package imports neither.
"""
