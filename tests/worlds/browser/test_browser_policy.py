"""The Playwright MCP server's configuration: what the browser world's Chromium is launched with."""

from __future__ import annotations

from openenv_mcp.worlds.browser.policy import playwright_config


def test_our_chromium_switches_do_not_replace_playwrights_disabled_features():
    """Chromium keeps the last of a repeated switch: our ``--disable-features=Translate,...`` used to
    replace Playwright's own list (PaintHolding, HttpsUpgrades, ... turned back on)."""
    config = playwright_config("/usr/bin/chromium", ["http://127.0.0.1:9"], host_rules="MAP * ~NOTFOUND", local=True)
    args = config["browser"]["launchOptions"]["args"]
    assert not [a for a in args if a.startswith(("--disable-features", "--enable-features"))], args
    assert "--host-resolver-rules=MAP * ~NOTFOUND" in args
    assert config["network"] == {"allowedOrigins": ["http://127.0.0.1:9"]} and config["webmcp"] is False
