"""Walk the whole visible filesystem and report canaries: run inside a sandbox (standard library only).

``python3 walker.py CANARIES_JSON SEALED_JSON`` (or the source passed to ``-c`` with the same arguments)
prints one JSON line: ``{"files": N, "read": N, "hits": [...], "sealed": [...]}``. Every path is
listed without following links (``/proc``, ``/sys`` and ``/dev`` left out); ``sealed`` names each
visible path inside one of SEALED (a folder no sandbox may show). Every readable regular file up to
:data:`MAX_BYTES` is read and searched for each canary, as is what zlib streams in it decompress to
(a loose git object; in a ``.pack``, every stream). The runtime's trees (the system folders, each
third-party package in a site-packages) are entered only on the way to a sealed path (a checkout
under ``/usr/src``, say): they are the host's own files, where no canary is planted.
"""

import json
import os
import stat
import sys
import zlib

MAX_BYTES = 8 * 1024 * 1024
SKIP_TREES = ("/proc", "/sys", "/dev")
RUNTIME = ("/usr/", "/lib", "/bin/", "/sbin/", "/etc/")


def decompressed(data, pack):
    """What the zlib streams in ``data`` decompress to: the whole file, or (a pack) each stream."""
    out = []
    if len(data) < 2:
        return out
    starts = range(len(data) - 1) if pack else [0]
    for i in starts:
        if data[i] != 0x78 or ((data[i] << 8) | data[i + 1]) % 31:
            continue
        try:
            out.append(zlib.decompressobj().decompress(data[i:], MAX_BYTES))
        except zlib.error:
            continue
    return out


def runtime(path):
    """Whether ``path`` lies in the runtime's trees (a system folder, a third-party package)."""
    if path.startswith(RUNTIME):
        return True
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            return not path.split(marker, 1)[1].startswith("openenv_mcp")
    return False


def scan(path, canaries):
    """The canaries found in the file ``path`` (its bytes, and what its zlib streams decompress to)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        data = os.read(fd, MAX_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    blobs = [data, *decompressed(data, path.endswith(".pack"))]
    return [c for c in canaries if any(c.encode() in blob for blob in blobs)]


def walk(canaries, sealed):
    report = {"files": 0, "read": 0, "hits": [], "sealed": []}
    stack = ["/"]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            path = entry.path if folder != "/" else "/" + entry.name
            if path in SKIP_TREES:
                continue
            report["files"] += 1
            if any(path == s or path.startswith(s.rstrip("/") + "/") for s in sealed):
                report["sealed"].append(path)
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if not runtime(path + "/") or any(s.startswith(path + "/") for s in sealed):
                    stack.append(path)
                continue
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES or runtime(path):
                continue
            found = scan(path, canaries)
            if found is not None:
                report["read"] += 1
                report["hits"] += [[path, c] for c in found]
    report["hits"] = report["hits"][:50]
    report["sealed"] = report["sealed"][:50]
    return report


if __name__ == "__main__" and len(sys.argv) > 2:
    print(json.dumps(walk(json.loads(sys.argv[1]), json.loads(sys.argv[2]))))
