"""The fork server (zygote) itself: ``python -I zygote_main.py FD MODULE``, standard library only.

Started by :mod:`openenv_mcp.isolation.faststart.template` inside a sandbox *template* (the tool server's bubblewrap sandbox:
read-only host, masks, no workspace, as root with only the capabilities needed to build a
child's namespaces). It imports the tool server ``MODULE`` once, then, for every episode,
receives (over the socket ``FD``) the episode's stdio pipes, workspace folder descriptor and
settings, and forks::

    zygote (root) -- A: joins the server's cgroup (its ``cgroup.procs``, opened by the host and
                        passed as a descriptor), setsid, new mount/PID/IPC/UTS/cgroup(/network) namespaces, the
                        workspace at /workspace, fresh /tmp /var/tmp /run /dev/shm (each a tmpfs
                        of ``tmpfs_mb``) and /dev/pts;
                        waits for B and exits with its status
                     -- B: PID 1 of the new namespace: a fresh /proc; reaps; exits with C's status
                          -- C: limits, every capability dropped, the episode's uid (no groups),
                                no_new_privs, parent-death signal; runs ``MODULE`` as ``__main__``

A child holds no descriptor of the zygote or of another episode (everything but its stdio is
closed before the namespaces are made), shares no writable memory (``fork`` copies on write),
cannot signal the zygote (root, in a PID namespace it cannot see) and sees no sibling.
The zygote never runs episode code: every child starts from the state right after the import.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import importlib
import json
import os
import re
import resource
import runpy
import selectors
import signal
import socket
import stat
import struct
import sys
import traceback

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
SYS_MOVE_MOUNT, AT_FDCWD, MOVE_MOUNT_F_EMPTY_PATH = 429, -100, 0x4
SYS_OPEN_TREE, OPEN_TREE_CLONE, AT_RECURSIVE = 428, 0x1, 0x8000
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


class SetupError(Exception):
    pass


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(code)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    _check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def prctl(option: int, arg: int = 0) -> None:
    _check(libc.prctl(option, arg, 0, 0, 0), f"prctl {option}")


def die_with_parent(parent: int) -> None:
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def fail(message: str) -> None:
    """Tell the host (the episode's stderr) why the child could not start, and end it."""
    try:
        os.write(2, f"fast start failed: {message}\n".encode())
    finally:
        os._exit(126)


# -- the three processes of one episode ----------------------------------------------
def child_a(cfg: dict, fds: list[int], keep: list[int]) -> None:
    """Root, still in the zygote's PID namespace: the server's cgroup, the episode's namespaces and mounts."""
    stdin, stdout, stderr, workspace, *group = fds
    for target, fd in ((0, stdin), (1, stdout), (2, stderr)):
        os.dup2(fd, target)
    if group:  # first (as the launcher does): every process of the episode is a member, however it detaches
        join_cgroup(group[0], cfg["cgroup_path"])
    ws = os.dup(workspace)  # above 2, then everything else goes
    os.closerange(3, ws)
    os.closerange(ws + 1, os.sysconf("SC_OPEN_MAX"))
    del keep
    try:
        die_with_parent(cfg["zygote"])
        os.setsid()
        flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
        if cfg["net"]:
            flags |= CLONE_NEWNET
        _check(libc.unshare(flags), "unshare")
        if libc.unshare(CLONE_NEWCGROUP) != 0:
            pass  # like bwrap's --unshare-cgroup-try
        mount(None, "/", None, MS_REC | MS_PRIVATE)
        # the host cloned the workspace's mount (open_tree): attach that detached tree here
        _check(
            libc.syscall(SYS_MOVE_MOUNT, ws, b"", AT_FDCWD, b"/workspace", MOVE_MOUNT_F_EMPTY_PATH), "mount /workspace"
        )
        mount(None, "/workspace", None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV)
        os.close(ws)
        for path, mode in (("/tmp", "1777"), ("/var/tmp", "1777"), ("/run", "0755")):
            kept = [(inner, clone_tree(inner)) for inner in mounts_under(path)]  # binds and masks the sandbox put there
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_options(cfg, mode))
            for inner, fd in kept:  # back on top of the fresh folder, as bwrap puts them on top of its tmpfs
                attach(fd, inner)
        if os.path.isdir("/dev/shm"):
            mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, tmpfs_options(cfg, "1777"))
        if os.path.isdir("/dev/pts"):
            mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
        socket.sethostname(cfg["hostname"])
        if cfg["net"]:
            loopback_up()
    except (OSError, SetupError) as e:
        fail(str(e))
    pid = os.fork()
    if pid == 0:
        child_b(cfg, 0)  # A is outside B's PID namespace: B sees its parent as 0
    null = os.open("/dev/null", os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(null, target)
    os.close(null)
    os._exit(wait_exit(pid))


def tmpfs_options(cfg: dict, mode: str) -> str:
    """Mount options of an episode's memory-backed folder: at most ``tmpfs_mb`` MiB of data and
    ``nr_inodes`` files (empty files cost kernel memory too)."""
    return f"mode={mode},size={int(cfg['tmpfs_mb'])}m,nr_inodes={int(cfg['nr_inodes'])}"


def join_cgroup(fd: int, path: str) -> None:
    """Move this process into the server's cgroup through ``fd``: its ``cgroup.procs``, opened by the host
    (the zygote's sandbox does not show ``/sys/fs/cgroup``; the kernel checks the opener's rights)."""
    try:
        os.write(fd, b"0")
    except OSError as e:
        try:
            os.write(2, f"could not join the server's cgroup {path}: {e.strerror}\n".encode())
        finally:
            os._exit(126)
    finally:
        os.close(fd)


def mounts_under(folder: str) -> list[str]:
    """The outermost mount points strictly inside ``folder`` (from ``/proc/self/mountinfo``)."""
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[4])
            if point.startswith(folder + "/") and point not in points:
                points.append(point)
    return [p for p in points if not any(p.startswith(q + "/") for q in points)]


def clone_tree(path: str) -> int:
    """A detached copy of the mount at ``path`` and every mount under it (``open_tree``)."""
    fd = libc.syscall(SYS_OPEN_TREE, AT_FDCWD, path.encode(), OPEN_TREE_CLONE | AT_RECURSIVE | os.O_CLOEXEC)
    if fd < 0:
        raise SetupError(f"open_tree {path}: {os.strerror(ctypes.get_errno())}")
    return fd


def attach(fd: int, path: str) -> None:
    """Attach a cloned tree at ``path``, making its mount point (and parents, ``0755``) first."""
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.makedirs(path, mode=0o755, exist_ok=True)
    elif not os.path.exists(path):
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
    _check(libc.syscall(SYS_MOVE_MOUNT, fd, b"", AT_FDCWD, path.encode(), MOVE_MOUNT_F_EMPTY_PATH), f"mount {path}")
    os.close(fd)


def child_b(cfg: dict, parent: int) -> None:
    """PID 1 of the episode's namespace (root): its /proc, then the server; reaps orphans."""
    try:
        die_with_parent(parent)
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        for cover in ("sys", "sysrq-trigger", "irq", "bus"):
            path = "/proc/" + cover
            if os.path.exists(path):
                mount(path, path, None, MS_BIND | MS_REC)
                mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except (OSError, SetupError) as e:
        fail(str(e))
    pid = os.fork()
    if pid == 0:
        child_c(cfg)
    null = os.open("/dev/null", os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(null, target)
    os.close(null)
    code = 0
    while True:  # as bwrap's init: reap everything, end (and so the namespace) with the server
        try:
            found, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if found == pid:
            code = os.waitstatus_to_exitcode(status)
            break
    os._exit(code if code >= 0 else 128 - code)


def child_c(cfg: dict) -> None:
    """The tool server: limits, no capabilities, the episode's uid, then ``MODULE`` as ``__main__``."""
    uid = cfg["uid"]
    try:
        die_with_parent(1)
        for which, soft, hard in cfg["rlimits"]:
            resource.setrlimit(which, (soft, hard))
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
        for cap in range(cfg["last_cap"] + 1):
            if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
                raise SetupError(f"could not drop capability {cap}")
        clear_inheritable()
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        if os.getuid() != uid or os.geteuid() != uid or os.getgid() != uid or os.getgroups():
            raise SetupError(f"could not drop to uid {uid}")
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.chdir("/workspace")
    except (OSError, SetupError) as e:
        fail(str(e))
    os.environ.clear()
    os.environ.update(cfg["env"])
    sys.argv = [cfg["module"], *cfg["args"]]
    code = 0
    try:
        runpy.run_module(cfg["module"], run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, (int, type(None))):
            sys.stderr.write(f"{e.code}\n")
    except BaseException:
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def clear_inheritable() -> None:
    """Empty the inheritable capability set (``setuid`` clears the others, not this one)."""
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _check(libc.capget(ctypes.byref(header), data), "capget")
    for half in data:
        half.inheritable = 0
    _check(libc.capset(ctypes.byref(header), data), "capset")


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def wait_exit(pid: int) -> int:
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            return 1
        code = os.waitstatus_to_exitcode(status)
        return code if code >= 0 else 128 - code


# -- the server loop -------------------------------------------------------------------
def preload(module: str) -> None:
    """Import the tool server and what its ``__main__`` loads (never run it)."""
    package = importlib.import_module(module)
    if hasattr(package, "__path__"):
        for name in ("__main__", "core"):
            try:
                importlib.import_module(f"{module}.{name}")
            except ModuleNotFoundError as e:
                if e.name != f"{module}.{name}":
                    raise
    for name in ("asyncio", "asyncio.subprocess", "json", "runpy"):
        importlib.import_module(name)


class _Zygote:
    """The server loop's state: the control socket, the running episodes and their report sockets."""

    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.last_cap = int(open("/proc/sys/kernel/cap_last_cap").read())  # noqa: SIM115
        self.me = os.getpid()
        self.waker_r, waker_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(waker_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.selector = selectors.DefaultSelector()
        self.selector.register(control, selectors.EVENT_READ)
        self.selector.register(self.waker_r, selectors.EVENT_READ)
        self.episodes: dict[int, socket.socket] = {}  # A's pid -> the episode's report socket
        self.reports: dict[int, int] = {}  # report socket's fd -> A's pid, while the host holds its end

    def run(self) -> None:
        """Answer ``ready``, then serve until the host closes the control socket."""
        self.control.sendall(json.dumps({"ready": self.me}).encode())
        while True:
            for key, _ in self.selector.select():
                if key.fileobj == self.waker_r:
                    self.woken()
                elif key.fileobj is not self.control:
                    self.abandoned(key.fileobj)  # type: ignore[arg-type]
                elif not self.receive():
                    return  # the host closed the socket (or died): end; children die with us
            self.reap()

    def woken(self) -> None:
        """A signal (SIGCHLD) arrived: empty the wakeup pipe and reap."""
        try:
            os.read(self.waker_r, 4096)
        except BlockingIOError:
            pass
        self.reap()

    def reap(self) -> None:
        """Collect the exited children; each one's exit status goes to its report socket, then it is closed."""
        while self.episodes:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            report = self.episodes.pop(pid, None)
            if report is not None:
                if report.fileno() in self.reports:
                    del self.reports[report.fileno()]
                    self.selector.unregister(report)
                try:
                    report.send(json.dumps({"exit": status}).encode())
                except OSError:
                    pass
                report.close()

    def abandoned(self, report: socket.socket) -> None:
        """The host closed an episode's socket (it stopped the episode, or gave up waiting for it):
        kill the child, so no server outlives its host side, even one forked while it was being closed."""
        pid = self.reports.pop(report.fileno(), None)
        self.selector.unregister(report)
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def receive(self) -> bool:
        """Read one episode request and start it (a malformed one is dropped, its descriptors closed).
        False when the host closed the control socket (the report sockets are closed then)."""
        try:
            data, fds, _, _ = socket.recv_fds(self.control, 65536, 8)
        except InterruptedError:
            return True
        if not data:
            for report in self.episodes.values():
                report.close()
            return False
        try:
            cfg = json.loads(data)
            report_fd, *stdio = fds
            if len(stdio) != (5 if cfg.get("cgroup_path") else 4):
                raise ValueError("unexpected number of descriptors")
        except ValueError:
            for fd in fds:
                os.close(fd)
            return True
        self.start(cfg, socket.socket(fileno=report_fd), stdio)
        return True

    def start(self, cfg: dict, report: socket.socket, stdio: list[int]) -> None:
        """Fork the episode's child A; its pid (or why the fork failed) goes to ``report``."""
        cfg["zygote"], cfg["last_cap"] = self.me, self.last_cap
        try:
            pid = os.fork()
        except OSError as e:
            report.send(json.dumps({"error": f"fork failed: {e.strerror}"}).encode())
            report.close()
            pid = -1
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            self.selector.close()
            for sock in (self.control, report, *self.episodes.values()):
                sock.detach()  # the descriptors are closed in child_a, the objects must not close them later
            child_a(cfg, stdio, [])
            os._exit(1)
        for fd in stdio:
            os.close(fd)
        if pid > 0:
            self.episodes[pid] = report
            try:
                report.send(json.dumps({"pid": pid}).encode())
            except OSError:
                pass
            self.reports[report.fileno()] = pid
            self.selector.register(report, selectors.EVENT_READ)


def serve(control: socket.socket, module: str) -> None:
    _Zygote(control).run()


def main() -> None:
    fd, module = int(sys.argv[1]), sys.argv[2]
    control = socket.socket(fileno=fd)
    os.set_inheritable(fd, False)
    try:
        preload(module)
    except BaseException as e:  # noqa: BLE001 - reported to the host, which falls back
        control.sendall(json.dumps({"error": f"could not import {module}: {e!r}"}).encode())
        sys.exit(1)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    serve(control, module)


if __name__ == "__main__":
    main()
