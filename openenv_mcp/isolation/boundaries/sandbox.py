"""Sandbox boundary: the process boundary inside bubblewrap namespaces.

Everything :mod:`openenv_mcp.isolation.boundaries.process` enforces (rlimits, unprivileged uid, scrubbed
environment, whole-tree kill, bounded reads), plus:

* **no network**: its own network namespace with only a loopback of its own
  (``network = "host"`` shares the host's);
* **a read-only root**: the host's top-level folders bound read-only, except
  the private ones (``/tmp``, ``/var/tmp``, ``/home``, ``/root``, ``/run``,
  ``/mnt``, ``/media``, ``/srv``), which are empty;
* **a private ``/tmp``** (also its ``HOME`` and ``TMPDIR``) and the episode's
  workspace, read-write, at ``/workspace`` (what ``{workspace}`` expands to);
* **capped memory-backed folders**: ``/tmp``, ``/var/tmp``, ``/run`` and ``/dev/shm`` are each a
  tmpfs of ``limits.tmpfs_mb`` (a write past it fails with ``ENOSPC``), masks a tmpfs of
  :data:`MASK_BYTES`, ``/dev`` read-only (its device nodes work); as root, each folder also holds
  at most ``nr_inodes`` files (:meth:`SandboxConnection.inode_caps`); every file is capped at
  ``limits.file_mb`` (``RLIMIT_FSIZE``, ``EFBIG``);
* what the command needs from private folders, read-only at the same path (never an
  environment folder, a checkout or its ``.git``: :mod:`openenv_mcp.isolation.host.allowlist`):
  the environment's folder when the command names it (``{env_dir}``), absolute paths in
  the command, and for Python commands the interpreter, the virtualenv, its ``.pth`` folders
  and the package's own folders;
* the spec's ``hide`` paths masked (an empty folder or file over each), so
  files in a bound folder (e.g. an environment's hidden tests) stay unseen;
* as root, bwrap runs privileged (no user namespace) and the server drops to
  its episode's unprivileged uid with ``setpriv`` once mounts are in place, so
  even a runtime under ``/root`` runs unprivileged with ``processes`` held;
  as another user, bwrap uses an unprivileged user namespace;
* **its own PID, IPC, UTS, user and cgroup namespaces**, ``--die-with-parent``,
  ``--new-session``, all capabilities dropped.

Needs ``bwrap`` 0.5 or newer (``apt-get install bubblewrap``).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

from openenv_mcp.definitions.spec import ToolServerSpec
from openenv_mcp.errors import BoundaryError, ConfigError
from openenv_mcp.isolation.base import ServerContext
from openenv_mcp.isolation.boundaries.process import ProcessConnection, _ProcessHost
from openenv_mcp.isolation.faststart.template import fast_process
from openenv_mcp.isolation.host.allowlist import allowlisted, inside
from openenv_mcp.isolation.host.exposure import outermost
from openenv_mcp.isolation.host.launch import SYSTEM_PATH, Launch, rlimits_for, tmpfs_inodes
from openenv_mcp.isolation.host.runtime import command_paths
from openenv_mcp.isolation.host.uids import UIDS
from openenv_mcp.isolation.transport.jsonlines import LINE_SLACK
from openenv_mcp.isolation.transport.mcpsession import SessionHost

__all__ = ["ETC_SECRETS", "HIDDEN", "SANDBOX_WORKSPACE", "SYSTEM", "SandboxConnection", "bwrap_path"]

SANDBOX_WORKSPACE = "/workspace"
"""Where the episode's workspace appears inside the sandbox."""

SYSTEM = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
"""The host's top-level folders a runtime needs, bound read-only. Nothing else of the host
(``/opt``, ``/srv``, ``/var``, ``/home``, ``/root``, ``/mnt``, a checkout under ``/work``...) is
there unless the command needs it (its program, runtime and imports, ``{env_dir}``) or the env
file binds it (``bind``, ``ro_bind``)."""

ETC_SECRETS = (
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "ssh",
    "ssl/private",
    "sudoers",
    "sudoers.d",
    "docker",
    "containerd",
    "security/opasswd",
    "krb5.keytab",
    "credstore",
    "credstore.encrypted",
    "ipsec.secrets",
    "wireguard",
    "openvpn",
    "NetworkManager/system-connections",
    "pip.conf",
    "npmrc",
)
"""Paths under ``/etc`` masked inside the sandbox (password hashes, keys, registry tokens)."""

HIDDEN = ("tmp", "run", "var/tmp")
"""Folders that exist inside the sandbox, empty and private to it (memory-backed, each capped at ``tmpfs_mb``)."""

MASK_BYTES = 65536
"""Size of the empty tmpfs masking a folder (a hidden path, a secret under ``/etc``): nothing is meant to be
written there, and whoever can write there fills at most this much memory."""


def bwrap_path() -> str:
    """The ``bwrap`` executable on ``PATH``, or a :class:`BoundaryError` saying how to install it."""
    found = shutil.which("bwrap")
    if found is None:
        raise BoundaryError(
            "isolation 'sandbox' needs bubblewrap, and 'bwrap' is not installed: "
            "run `apt-get install bubblewrap` (Debian/Ubuntu) or `dnf install bubblewrap` (Fedora)"
        )
    version = _bwrap_version(found)
    if version is not None and version < (0, 5):
        raise BoundaryError(
            f"isolation 'sandbox' needs bubblewrap 0.5 or newer (its --size caps the memory-backed folders), "
            f"and {found} is {'.'.join(map(str, version))}: install a newer bubblewrap"
        )
    return found


@functools.cache
def _bwrap_version(path: str) -> tuple[int, ...] | None:
    """``bwrap --version`` as numbers (``(0, 8, 0)``), or ``None`` when it does not say."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    return None if found is None else tuple(int(g) for g in found.groups() if g is not None)


def _system(path: str) -> bool:
    """Whether ``path`` lies in one of the :data:`SYSTEM` folders (there in every sandbox)."""
    parts = Path(path).parts
    return len(parts) > 1 and parts[0] == "/" and parts[1] in SYSTEM


def _mask(path: str) -> list[str]:
    """bwrap arguments hiding ``path``: an empty, small tmpfs over a folder, ``/dev/null`` over a file."""
    return ["--size", str(MASK_BYTES), "--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]


def _reachable(path: str) -> bool:
    real = Path(os.path.realpath(path))
    try:
        return all(p.stat().st_mode & 0o001 for p in real.parents) and bool(real.stat().st_mode & 0o004)
    except OSError:
        return False


class SandboxConnection(ProcessConnection):
    """A stdio MCP server in a bubblewrap sandbox."""

    boundary = "sandbox"

    def __init__(self, spec: ToolServerSpec, ctx: ServerContext, base_dir: Path | None = None) -> None:
        self.bwrap = bwrap_path()
        # As root, bwrap runs privileged (no user namespace) and drops to the server's uid with
        # setpriv inside, after it has bound what the server needs: even a runtime under a private
        # folder (/root/.pyenv, a venv in a home) then runs as the unprivileged uid.
        self.setpriv = shutil.which("setpriv") if os.geteuid() == 0 else None
        super().__init__(spec, ctx, base_dir)

    @property
    def privileged(self) -> bool:
        """bwrap runs as root and the server drops to :attr:`uid` inside."""
        return self.setpriv is not None and self.uid is not None

    def can_drop_to_uid(self) -> bool:
        return self.setpriv is not None or super().can_drop_to_uid()

    def workspace_path(self) -> str:
        return SANDBOX_WORKSPACE

    def per_episode_values(self) -> dict[str, str]:
        # /workspace, HOME, TMPDIR and the hostname are the same in every episode inside
        return {"the episode's uid": str(self.uid)} if self.uid is not None else {}

    def child_env(self, executable: str) -> dict[str, str]:
        folder = os.path.dirname(executable)
        env = {
            "PATH": f"{folder}:{SYSTEM_PATH}" if folder else SYSTEM_PATH,
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
        }
        env.update(self.placeholders(self.ctx.env))
        return env

    def _env_paths(self, names: list[str]) -> list[str]:
        out = []
        for name in names:
            path = name if os.path.isabs(name) else os.path.realpath(self.base_dir / name)
            if not os.path.exists(path):
                raise ConfigError(f"tool server {self.spec.name!r}: bind path {name!r} does not exist ({path})")
            out.append(path)
        return out

    def names_env_dir(self, argv: list[str]) -> bool:
        """Whether the command or its variables name the env folder (``{env_dir}``, or a path in it):
        only then is the env folder bound (a bundled environment's: only the paths named in it)."""
        own = str(self.base_dir)
        if any("{env_dir}" in a for a in [*(self.spec.command or []), *self.spec.env.values()]):
            return True
        return any(inside(os.path.realpath(a), own) for a in argv[1:] if a.startswith("/"))

    def needed_paths(self, argv: list[str]) -> list[str]:
        """Host paths the command needs (outside the system folders), bound read-only at the
        same place: its program and runtime, what it imports, ``{env_dir}`` when named, ``ro_bind``;
        never a sealed path nor a checkout (:func:`~openenv_mcp.isolation.host.allowlist.allowlisted`)."""
        own = str(self.base_dir)
        paths = [p for p in command_paths(argv, self.base_dir) if p != own or self.names_env_dir(argv)]
        paths = allowlisted([*paths, *self._env_paths(self.spec.ro_bind)], own_env=own)
        seen = []
        for path in paths:
            if not _system(path) and path not in seen and os.path.exists(path):
                # bwrap running as the server's uid cannot bind what that uid cannot reach
                if self.uid is None or self.privileged or _reachable(path):
                    seen.append(path)
        # Bind only the outermost folders: a path inside another bound folder is already there,
        # and binding it again on top (a venv's python symlink under a checkout in /tmp, say)
        # makes bwrap fail to create the mount point.
        outer = outermost(seen)
        return [p for p in seen if p in outer]

    def missing_hint(self) -> str | None:
        return (
            f" (hint: the sandbox shows only the system folders ({', '.join('/' + n for n in SYSTEM)}), the "
            "workspace and what the command needs: its program, the files it names and their runtime (virtualenv, "
            "script interpreter, Node package with its node_modules), read-only; if the server needs another "
            'folder, bind it read-only with ro_bind = ["/path/to/folder"] (or read-write with bind) in its '
            "[[tool_servers]] table of the env file)"
        )

    def hidden_paths(self) -> list[str]:
        """The spec's ``hide`` paths (resolved against the env folder) that exist on the host.
        Each is masked: an empty tmpfs over a folder, ``/dev/null`` over a file."""
        out = []
        for rel in self.spec.hide:
            path = os.path.realpath(self.base_dir / rel)
            if os.path.lexists(path) and path not in out:
                out.append(path)
        return out

    def _namespace_args(self) -> list[str]:
        """``bwrap`` and its namespace, session and capability options (the network shared or not)."""
        if self.privileged:  # no user namespace: the uid change below is a real host uid
            args = [
                self.bwrap,
                "--unshare-ipc",
                "--unshare-pid",
                "--unshare-uts",
                "--unshare-cgroup-try",
                "--die-with-parent",
                "--new-session",
                "--cap-add",
                "CAP_SETUID,CAP_SETGID",
                "--cap-add",
                "CAP_SYS_ADMIN",  # for the remounts of inode_caps(), run before the server; setpriv drops it
                "--hostname",
                "openenv-sandbox",
            ]
            if self.spec.network != "host":
                args.append("--unshare-net")
            return args
        args = [
            self.bwrap,
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--hostname",
            "openenv-sandbox",
        ]
        if self.spec.network == "host":
            args.append("--share-net")
        return args

    def _system_args(self) -> list[str]:
        """The system folders read-only, the ``/etc`` secrets masked, ``/proc``, a read-only ``/dev``
        with a capped ``/dev/shm``, and the hidden top-level folders as capped tmpfs."""
        args: list[str] = []
        for name in SYSTEM:
            path = "/" + name
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        for name in ETC_SECRETS:
            path = "/etc/" + name
            if os.path.lexists(path) and not os.path.islink(path):
                args += _mask(path)
        # bwrap's /dev is a tmpfs of no size (owned by the server's uid without root): /dev/shm gets a capped
        # tmpfs of its own and /dev itself is made read-only (its device nodes stay usable)
        size = str(self.spec.limits.tmpfs_mb * 1024 * 1024)
        args += ["--proc", "/proc", "--dev", "/dev", "--size", size, "--perms", "1777", "--tmpfs", "/dev/shm"]
        args += ["--remount-ro", "/dev"]
        for name in HIDDEN:
            args += ["--size", size, "--perms", "1777" if "tmp" in name else "0755", "--tmpfs", "/" + name]
        return args

    def _bind_args(self, argv: list[str]) -> tuple[list[str], list[str]]:
        """The binds of what the command needs (read-only) and of ``bind`` (read-write), each after the
        folders bwrap must create for it, then the masks of ``hide``; with the bound host paths."""
        args: list[str] = []
        made: set[str] = set()
        writable = allowlisted(self._env_paths(self.spec.bind), own_env=str(self.base_dir))
        bound = self.needed_paths(argv) + writable
        for path in bound:
            for parent in reversed(Path(path).parents[:-1]):  # folders bwrap must create: searchable
                if str(parent) not in made and not _system(str(parent)):
                    made.add(str(parent))
                    args += ["--perms", "0755", "--dir", str(parent)]
            args += ["--bind" if path in writable else "--ro-bind", path, path]
        for path in self.hidden_paths():
            if not any(inside(path, b) for b in bound):
                continue  # not there anyway: masking it would only make its mount point (and show its name)
            args += _mask(path)
        return args, bound

    def _drop_privileges_args(self, bound: list[str]) -> list[str]:
        """Without a user namespace: the inode-cap remounts, then ``setpriv`` to the server's uid with
        no capabilities; nothing otherwise."""
        if not self.privileged or self.setpriv is None:  # privileged: setpriv was found
            return []
        uid = str(self.uid)
        return [
            *self.inode_caps(bound),
            self.setpriv,
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]

    def bwrap_args(self, argv: list[str]) -> list[str]:
        """The full ``bwrap ... -- argv`` command line."""
        args = self._namespace_args() + self._system_args()
        binds, bound = self._bind_args(argv)
        args += binds
        args += ["--bind", str(self.ctx.workspace), SANDBOX_WORKSPACE, "--chdir", SANDBOX_WORKSPACE]
        args += ["--remount-ro", "/", "--"]
        return args + self._drop_privileges_args(bound) + argv

    def inode_caps(self, bound: list[str]) -> list[str]:
        """As root: a prefix that caps the number of files of each memory-backed folder (bubblewrap sets only
        the size; empty files cost kernel memory too) by remounting it with ``nr_inodes``, then runs the rest
        (``setpriv``, which drops every capability, then the server). ``[]`` without ``mount`` on the host.
        A folder the env file binds from the host (``bind = ["/tmp"]``) is not ours to remount: it is left."""
        mount = shutil.which("mount")
        folders = [f for f in ("/tmp", "/var/tmp", "/run", "/dev/shm") if f not in bound]
        if mount is None or not os.path.exists("/bin/sh") or not folders:
            return []
        inodes = tmpfs_inodes(self.spec.limits.tmpfs_mb)
        script = f'for d in {" ".join(folders)}; do {mount} -o remount,nr_inodes={inodes} "$d" || exit 125; done; '
        return ["/bin/sh", "-c", script + 'exec "$@"', "sh"]

    def launch(self, argv: list[str], executable: str | None = None) -> Launch:
        executable = executable or self.executable
        full = [executable, *argv[1:]]
        return Launch(
            self.bwrap_args(full),
            self.child_env(executable),
            str(self.ctx.workspace),
            None if self.privileged else self.uid,
            rlimits_for(self.spec, self.uid is not None),
            cgroup=self.group(),
        )

    def _new_host(self) -> SessionHost:
        """The server forked by its zygote when fast starts apply (see :mod:`openenv_mcp.isolation.faststart.template`), else a plain start."""
        argv = [self.executable, *self.command()[1:]]
        limit = self.spec.limits.output_bytes
        kill_uid = UIDS.exclusive(self.ctx.episode_id)
        plain = lambda: self.launch(self.command())  # noqa: E731 - only made when no zygote can start
        fast = fast_process(self, argv, plain, 2 * limit + LINE_SLACK, limit, kill_uid)
        return super()._new_host() if fast is None else _ProcessHost(self.spec.name, fast)
