"""The browser world: the real Playwright MCP server driving Chromium against web applications
the environment owns, graded from the applications' server-side state.

One episode is one bubblewrap sandbox (the ``sandbox`` boundary, no network but its own loopback)
holding two sides, started by :mod:`.launch`:

* the **applications** (:mod:`.apphost`): the environment's Starlette apps, one process serving
  ``http://<app>.localhost:8000`` on the sandbox's loopback, their data in memory only (SQLite
  ``:memory:``), the process not dumpable (nothing of the same uid can read its memory);
  they are seeded and read by the grader through a Unix socket (:mod:`.control`) that only a
  process outside the sandbox's PID namespace may use;
* the **browser**: the unmodified ``@playwright/mcp`` server (pinned, :mod:`.install`) and
  Debian's Chromium, in a user and mount namespace of their own with every capability dropped,
  where the state socket's folder is an empty one and Chromium's managed policy
  (:mod:`.policy`) blocks every URL but the applications' origins (``file:``, ``chrome:``...).

Everything the grader knows stays in the environment server: the seeded data is generated
there (:mod:`.seeding`) and pushed in, the state comes back out, and the reward compares.
"""

APP_PORT = 8000
"""The port every application listens on inside its sandbox (each sandbox has its own loopback)."""

WORLD_DIR = ".world"
"""Folder of the workspace holding the state socket (hidden from the browser side)."""

BROWSER_DIR = "browser"
"""Folder of the workspace the Playwright MCP server works in (its file root: uploads, screenshots)."""

CONTROL_SOCKET = "control.sock"
"""The state socket's name in :data:`WORLD_DIR`."""


def origin(app: str) -> str:
    """The origin an application is served at: ``http://shop.localhost:8000``."""
    return f"http://{app}.localhost:{APP_PORT}"
