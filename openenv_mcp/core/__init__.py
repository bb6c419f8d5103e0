"""The runtime core: an environment (:mod:`~openenv_mcp.core.environment`), its episodes (the one dispatch
path both faces go through, :mod:`~openenv_mcp.core.episode`), their routes to the tool servers, warm worlds,
CodeAct, argument validation, scoring and rewards (commands, rubrics, the LLM judge).

Built on :mod:`openenv_mcp.isolation` and :mod:`openenv_mcp.definitions`; clients, serving and everything
above build on it.
"""
