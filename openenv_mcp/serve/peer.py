"""Who is at the other end of a connection: the trainer on this machine, or anyone else.

Without ``--token`` the server still tells the trainer from an agent. It trusts a TCP connection as the
trainer's when all of these hold, and treats it as untrusted otherwise:

* the peer is on loopback (``127.0.0.0/8``, ``::1``, or their IPv4-mapped form): a remote machine is
  never trusted without the token;
* the client's socket of that connection belongs to the server's own uid or to root. The kernel tells
  the socket's owner and inode: first by an exact ``sock_diag`` (netlink) lookup of the connection's
  four-tuple, else from ``/proc/net/tcp`` and ``/proc/net/tcp6`` (the kernel walks its whole socket
  table to print those, tens of milliseconds on a large machine, so they are the fallback). An
  episode's tool servers run as leased uids of their own when the server runs as root, so they fail
  here;
* a process holding that socket is in the server's own mount namespace, and none outside it holds
  it. A sandbox (bubblewrap, even with ``network = "host"``) or a container (even ``--network host``,
  even as root) has a mount namespace of its own, so code inside one is never the trainer. The
  holder is found by scanning ``/proc/*/fd`` for the socket's inode, once per connection: the verdict
  is cached by (client address, client port, socket inode), and the inode is looked up again on every
  request, so a port reused by another socket is judged afresh.

Whatever cannot be told (no ``/proc``, no readable holder, a socket that vanished, any other OS than
Linux) is untrusted: such a trainer starts the server with ``--token``.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
import sys
from collections import OrderedDict
from typing import Any

import anyio
import anyio.to_thread

__all__ = ["PeerJudge", "loopback", "refusal", "socket_owner"]

_SOCK_DIAG_BY_FAMILY = 20
_NETLINK_SOCK_DIAG = 4
_NLMSG_ERROR = 2
_NO_COOKIE = 0xFFFFFFFF
_CACHE_SIZE = 4096


def refusal(what: str) -> str:
    """What an untrusted client is told when it asks for ``what`` (a route, a method) without a token."""
    return (
        f"{what} is for the trainer, and this client is not one: without --token the server trusts only "
        "processes of its own user (or root) on this machine, outside any sandbox or container. An agent "
        "uses its episode's MCP address (/episodes/{id}/{key}/mcp) or /mcp; anyone else needs the server "
        "started with --token TOKEN and 'Authorization: Bearer TOKEN'"
    )


def loopback(address: str) -> bool:
    """Whether ``address`` is a loopback address (IPv4-mapped IPv6 included)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def _forms(address: str) -> list[tuple[int, str]]:
    """``(family, address)`` forms a socket at ``address`` may have: an IPv4-mapped one may be either."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped
        return [(socket.AF_INET, str(mapped)), (socket.AF_INET6, str(ip))] if mapped else [(socket.AF_INET6, str(ip))]
    return [(socket.AF_INET, str(ip)), (socket.AF_INET6, f"::ffff:{ip}")]


def _diag(family: int, src: str, sport: int, dst: str, dport: int) -> tuple[int, int] | None:
    """``(uid, inode)`` of the TCP socket bound to ``src:sport`` and connected to ``dst:dport`` (sock_diag)."""

    def packed(address: str) -> bytes:
        raw = socket.inet_pton(family, address)
        return raw + b"\0" * (16 - len(raw))

    sockid = (
        struct.pack("!HH", sport, dport) + packed(src) + packed(dst) + struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE)
    )
    request = struct.pack("=BBBxI", family, socket.IPPROTO_TCP, 0, 0xFFFFFFFF) + sockid
    header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, 1, 1, 0)  # NLM_F_REQUEST
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as nl:
        nl.settimeout(1.0)
        nl.sendto(header + request, (0, 0))
        data = nl.recv(8192)
    if len(data) < 16 + 4 + 48 + 20:
        return None
    kind = struct.unpack_from("=H", data, 4)[0]
    if kind != _SOCK_DIAG_BY_FAMILY:
        return None  # NLMSG_ERROR: no such socket
    uid, inode = struct.unpack_from("=II", data, 16 + 4 + 48 + 12)
    return uid, inode


def _hex(family: int, address: str, port: int) -> str:
    """``/proc/net/tcp*`` spelling of ``address:port`` (32-bit words in host byte order)."""
    raw = socket.inet_pton(family, address)
    words = struct.unpack(f"={len(raw) // 4}I", raw)
    return "".join(f"{w:08X}" for w in words) + f":{port:04X}"


def _proc_net(family: int, src: str, sport: int, dst: str, dport: int) -> tuple[int, int] | None:
    """``(uid, inode)`` of that socket from ``/proc/net/tcp`` or ``/proc/net/tcp6``."""
    local, remote = _hex(family, src, sport), _hex(family, dst, dport)
    path = "/proc/net/tcp6" if family == socket.AF_INET6 else "/proc/net/tcp"
    try:
        with open(path, encoding="ascii") as table:
            next(table, None)
            for line in table:
                fields = line.split()
                if len(fields) > 9 and fields[1] == local and fields[2] == remote:
                    return int(fields[7]), int(fields[9])
    except OSError:
        return None
    return None


def socket_owner(client: tuple[str, int], server: tuple[str, int]) -> tuple[int, int] | None:
    """``(uid, inode)`` of the client's socket of the TCP connection ``client`` -> ``server``, or ``None``."""
    for family, src in _forms(client[0]):
        dst = next((a for f, a in _forms(server[0]) if f == family), None)
        if dst is None:
            continue
        found = None
        try:
            found = _diag(family, src, client[1], dst, server[1])
        except OSError:
            found = _proc_net(family, src, client[1], dst, server[1])
        if found is not None and found[1] != 0:
            return found
    return None


def _holders_in_namespace(inode: int) -> bool:
    """Whether a process in this process's mount namespace holds socket ``inode`` and none outside it does."""
    target = f"socket:[{inode}]"
    try:
        ours = os.readlink("/proc/self/ns/mnt")
    except OSError:
        return False
    own, parent = str(os.getpid()), str(os.getppid())
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    same: list[str] = []
    for pid in pids:
        try:
            namespace = os.readlink(f"/proc/{pid}/ns/mnt")
        except OSError:
            continue  # gone, or not ours to read
        if namespace != ours:
            if _holds(pid, target):
                return False
        else:
            same.append(pid)
    rank = {own: 0, parent: 1}
    same.sort(key=lambda p: (rank.get(p, 2), -int(p)))  # this process, its parent, then the newest
    return any(_holds(pid, target) for pid in same)


def _holds(pid: str, target: str) -> bool:
    folder = f"/proc/{pid}/fd/"
    try:
        fds = os.listdir(folder)
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(folder + fd) == target:
                return True
        except OSError:
            continue
    return False


class PeerJudge:
    """Judges connections by the rules of the module docstring; one per app (it holds the cache)."""

    def __init__(self) -> None:
        self.uid = os.geteuid() if hasattr(os, "geteuid") else -1
        self.enabled = sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd")
        self._verdicts: OrderedDict[tuple[str, int, int], bool] = OrderedDict()
        self._scans: anyio.CapacityLimiter | None = None  # made in the event loop, on first use

    def owner(self, client: tuple[str, int] | None, server: tuple[str, int] | None) -> tuple[int, int] | None:
        """The client socket's ``(uid, inode)`` when the connection is one the rules may trust, else ``None``."""
        if not self.enabled or client is None or server is None or not loopback(client[0]):
            return None
        try:
            found = socket_owner((client[0], int(client[1])), (server[0], int(server[1])))
        except (OSError, ValueError):
            return None
        if found is None or found[0] not in (self.uid, 0):
            return None
        return found

    async def trusted(self, scope: Any) -> bool:
        """Whether the connection of an ASGI ``scope`` is the trainer's (the scan runs off the event loop,
        once per connection)."""
        client, server = scope.get("client"), scope.get("server")
        found = self.owner(client, server)
        if found is None:
            return False
        key = (str(client[0]), int(client[1]), found[1])
        verdict = self._verdicts.get(key)
        if verdict is None:
            if self._scans is None:
                self._scans = anyio.CapacityLimiter(2)  # scans share two threads: many connections cannot pile up
            verdict = await anyio.to_thread.run_sync(_judge, found[1], limiter=self._scans)
            self._verdicts[key] = verdict
            while len(self._verdicts) > _CACHE_SIZE:
                self._verdicts.popitem(last=False)
        else:
            self._verdicts.move_to_end(key)
        return verdict


def _judge(inode: int) -> bool:
    try:
        return _holders_in_namespace(inode)
    except OSError:
        return False
