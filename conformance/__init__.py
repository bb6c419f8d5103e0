"""Data files of the conformance suite, installed as ``openenv_mcp.conformance.data``.

Shipped: the official suite's not-applicable list, the official fixture's env files, the
known-failures example and ``node-tools.sh`` (installs the Node 22 MCP tooling). The ``fixtures/``
folder (deliberately broken servers and environments) is for this repository's tests only.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent
