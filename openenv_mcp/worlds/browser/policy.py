"""How the browser side is configured: the Playwright MCP server's config file and Chromium's
managed policy, both derived from the origins the agent may reach.

Two fences, each enforced by the browser's own code (the sandbox's network namespace is the wall
underneath: nothing but its own loopback exists there):

* Chromium's **URLBlocklist/URLAllowlist policy** (read from ``/etc/chromium/policies/managed/``,
  which :mod:`.launch` mounts in the browser's own mount namespace): every URL is blocked but the
  allowed origins and ``about:blank`` — ``file:``, ``chrome:``, ``view-source:``, ``data:`` and any
  other host included, whatever starts the navigation (the agent, a page, a redirect);
* Playwright MCP's ``network.allowedOrigins`` (requests to other origins are aborted) and its
  default file rules (uploads and output files stay inside its working folder, ``file:`` navigation
  is refused).
"""

from __future__ import annotations

from typing import Any

__all__ = ["CHROMIUM_ARGS", "chromium_policy", "playwright_config"]

CHROMIUM_ARGS = (
    "--disable-dev-shm-usage",  # shared memory in the sandbox's /tmp, not /dev/shm
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-gpu",
    "--disable-breakpad",
)
"""Chromium switches for a headless browser that makes no requests of its own.

No ``--disable-features`` here: Chromium keeps the last of a repeated switch, so one of ours would replace
Playwright's own list (which disables Translate, MediaRouter and OptimizationHints already, and PaintHolding,
HttpsUpgrades, ThirdPartyStoragePartitioning; ours used to replace it)."""


def chromium_policy(origins: list[str]) -> dict[str, Any]:
    """Chromium's managed policy: nothing but ``origins`` (and ``about:blank``) can be loaded."""
    return {
        # "*" covers the web schemes; the browser's own pages and local files are named as well
        "URLBlocklist": ["*", "chrome://*", "chrome-untrusted://*", "chrome-search://*", "file://*", "view-source:*"],
        "URLAllowlist": [*origins, "about:blank"],
        "DownloadRestrictions": 3,  # no downloads at all
        "PasswordManagerEnabled": False,
        "AutofillAddressEnabled": False,
        "AutofillCreditCardEnabled": False,
        "BrowserSignin": 0,
        "SyncDisabled": True,
        "MetricsReportingEnabled": False,
        "SafeBrowsingProtectionLevel": 0,
        "SearchSuggestEnabled": False,
        "SpellcheckEnabled": False,
        "TranslateEnabled": False,
        "WebRtcIPHandling": "disable_non_proxied_udp",
        "DefaultNotificationsSetting": 2,
        "DefaultGeolocationSetting": 2,
    }


LOCAL_TIMEOUTS = {"action": 2000, "navigation": 15000}
"""Playwright's waits (ms) when the pages are the environment's own, served on the sandbox's loopback:
an element that is not there after 2 s will not come (the defaults, 5 s and 60 s, are for the web)."""


def playwright_config(
    chromium: str,
    origins: list[str],
    *,
    host_rules: str | None,
    local: bool = False,
    viewport: tuple[int, int] = (1280, 800),
) -> dict[str, Any]:
    """The ``--config`` file of the Playwright MCP server: Debian's Chromium, headless, a profile in
    memory (``isolated``), only ``origins`` reachable, no page-registered (WebMCP) tools; ``local``:
    the pages are the environment's own applications (shorter waits)."""
    args: list[str] = list(CHROMIUM_ARGS)
    if host_rules:
        args.append(f"--host-resolver-rules={host_rules}")
    return {
        "browser": {
            "browserName": "chromium",
            "isolated": True,
            "launchOptions": {
                "executablePath": chromium,
                "headless": True,
                "chromiumSandbox": False,  # the bubblewrap sandbox and its namespaces are the wall
                "args": args,
            },
            "contextOptions": {"viewport": {"width": viewport[0], "height": viewport[1]}},
        },
        "network": {"allowedOrigins": list(origins)},
        "webmcp": False,
        "imageResponses": "allow",
        **({"timeouts": dict(LOCAL_TIMEOUTS)} if local else {}),
    }
