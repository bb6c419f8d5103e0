"""Fast sandboxed starts: where they apply and the zygote's sandbox template
(:mod:`~openenv_mcp.isolation.faststart.template`), the running zygotes (:mod:`~openenv_mcp.isolation.faststart.zygote`),
an episode's forked server (:mod:`~openenv_mcp.isolation.faststart.forked`) and the zygote's own program
(:mod:`~openenv_mcp.isolation.faststart.zygote_main`, standard library only, run as a file).
"""
