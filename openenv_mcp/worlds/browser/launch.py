"""The browser world's tool server, as the sandbox starts it:
``python -m openenv_mcp.worlds.browser.launch --playwright CLI.js [--apps DIR --app NAME ...] [--origin URL ...]``.

1. makes ``/workspace/.world`` (the state socket's folder) and ``/workspace/browser`` (the Playwright
   MCP server's working folder);
2. starts the app host (:mod:`.apphost`) as a child: a fresh interpreter, not dumpable, its output on
   stderr (stdout is the MCP channel);
3. moves itself into a **user and mount namespace of its own** where ``/workspace/.world`` is an empty
   folder and ``/etc/chromium/policies/managed/`` holds the URL policy (:mod:`.policy`), drops every
   capability (bounding set emptied, ``SECBIT_NOROOT`` locked, no new privileges);
4. ``exec``s Node on the pinned ``@playwright/mcp`` with the generated config: the MCP session the
   environment opened on stdin/stdout is the Playwright server's from then on.

Without ``--apps`` (production: ``--origin`` names the user's site) step 2 is skipped.
Only the standard library is imported here (the browser's start is on every episode's path).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys

from openenv_mcp.worlds.browser import APP_PORT, BROWSER_DIR, WORLD_DIR, origin
from openenv_mcp.worlds.browser.policy import chromium_policy, playwright_config

__all__ = ["main"]

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
PR_SET_SECUREBITS, PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 28, 24, 47, 4
PR_SET_NO_NEW_PRIVS = 38
SECBIT_ALL_LOCKED = 0x3F  # NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED and their locks
POLICY_DIR = "/etc/chromium/policies/managed"
CHROMIUM = "/usr/bin/chromium"
WORLD_CLOCK = "2026-03-16T09:30:00Z"
"""The Playwright server's wall clock in simulation: the applications' "now" (see ``clock.cjs``)."""

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount_tmpfs(target: str, options: str) -> None:
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    _check(_libc.mount(b"none", target.encode(), b"tmpfs", flags, options.encode()), f"mounting a tmpfs on {target}")


def enter_browser_namespace(workspace: str, policy: dict[str, object]) -> None:
    """Steps 3 of the module docstring (this process must be single-threaded)."""
    uid, gid = os.getuid(), os.getgid()
    if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
        errno = ctypes.get_errno()
        raise OSError(
            errno,
            f"the browser side needs a user namespace of its own inside the sandbox ({os.strerror(errno)}): "
            "allow unprivileged user namespaces on this host (sysctl user.max_user_namespaces > 0, "
            "kernel.unprivileged_userns_clone = 1, or the AppArmor/SELinux rule that forbids them)",
        )
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "making the mounts private")
    _mount_tmpfs(os.path.join(workspace, WORLD_DIR), "size=16k,mode=0755")
    _mount_tmpfs("/etc/chromium", "size=1m,mode=0755")
    os.makedirs(POLICY_DIR, mode=0o755)
    with open(os.path.join(POLICY_DIR, "openenv-mcp.json"), "w") as f:
        json.dump(policy, f)
    drop_capabilities()


def drop_capabilities() -> None:
    """No capability survives the ``exec`` (nor can one be gained back through a setuid file)."""
    _check(_libc.prctl(PR_SET_SECUREBITS, SECBIT_ALL_LOCKED, 0, 0, 0), "locking the securebits")
    cap = 0
    while _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1
    _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clearing the ambient capabilities")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "setting no_new_privs")


def start_apphost(apps_dir: str, apps: list[str], workspace: str) -> subprocess.Popen[bytes]:
    """The app host, its stdout on our stderr (stdout carries MCP)."""
    argv = [sys.executable, "-m", "openenv_mcp.worlds.browser.apphost", "--apps-dir", apps_dir]
    argv += [a for app in apps for a in ("--app", app)]
    argv += ["--control", os.path.join(workspace, WORLD_DIR), "--port", str(APP_PORT)]
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(), close_fds=True)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="openenv_mcp.worlds.browser.launch", description=__doc__, allow_abbrev=False)
    p.add_argument("--playwright", required=True, help="the @playwright/mcp cli.js to run")
    p.add_argument("--apps-dir", help="folder of the environment's applications (one NAME.py each)")
    p.add_argument("--app", action="append", default=[], help="an application to serve (repeat)")
    p.add_argument("--origin", action="append", default=[], help="an origin the browser may reach (repeat)")
    p.add_argument("--origins-from-env", metavar="NAME", help="more origins, ';'-separated, from variable NAME")
    p.add_argument("--workspace", default=os.getcwd())
    p.add_argument("extra", nargs="*", help="more Playwright MCP arguments (after --)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    workspace = os.path.abspath(args.workspace)
    named = list(args.origin)
    if args.origins_from_env:
        named += [o.strip() for o in os.environ.get(args.origins_from_env, "").split(";") if o.strip()]
    origins = [origin(app) for app in args.app] + [o.rstrip("/") for o in named]
    if not origins:
        hint = (
            f": set {args.origins_from_env}, e.g. {args.origins_from_env}=https://example.com"
            if args.origins_from_env
            else ""
        )
        print(f"launch: no application and no origin: every page is blocked{hint}", file=sys.stderr)
    for folder in (WORLD_DIR, BROWSER_DIR):
        os.makedirs(os.path.join(workspace, folder), mode=0o700, exist_ok=True)
    if args.app:
        if not args.apps_dir:
            sys.exit("launch: --app needs --apps-dir")
        start_apphost(args.apps_dir, args.app, workspace)
    node = shutil.which("node")
    if node is None:
        sys.exit("launch: Node.js is not installed (apt-get install nodejs): the Playwright MCP server needs it")
    tmp = os.environ.get("TMPDIR", "/tmp")
    config_path = os.path.join(tmp, "playwright-mcp.json")
    # apps only: names outside *.localhost never resolve (production reaches the user's site by DNS)
    rules = "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE *.localhost" if args.app and not named else None
    with open(config_path, "w") as f:
        json.dump(playwright_config(CHROMIUM, origins, host_rules=rules, local=bool(args.app)), f)
    try:
        enter_browser_namespace(workspace, chromium_policy(origins))
    except OSError as e:
        sys.exit(f"launch: {e}")
    os.chdir(os.path.join(workspace, BROWSER_DIR))
    node_args = [node]
    if args.app:  # simulation: the server's wall clock is the world's (see clock.cjs)
        node_args += ["--require", os.path.join(os.path.dirname(os.path.abspath(__file__)), "clock.cjs")]
        os.environ["OPENENV_BROWSER_CLOCK"] = WORLD_CLOCK
    os.execv(node, [*node_args, args.playwright, "--config", config_path, *args.extra])


if __name__ == "__main__":
    main()
