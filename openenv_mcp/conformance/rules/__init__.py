"""The conformance rules, one module per section; importing this package registers them."""

from openenv_mcp.conformance.rules import mcp, env, fork, toollist, answers, wire, shutdown, containment  # noqa: F401,I001  (registration order = run order)
