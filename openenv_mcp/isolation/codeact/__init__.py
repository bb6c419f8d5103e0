"""CodeAct behind the sandbox: the interpreter process an episode's ``RunCode`` runs in
(:mod:`~openenv_mcp.isolation.codeact.interpreter`) and the program inside it
(:mod:`~openenv_mcp.isolation.codeact.coderunner`, run as a file).
"""
