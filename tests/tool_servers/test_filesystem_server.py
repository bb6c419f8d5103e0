"""The filesystem tool server: every tool, every escape refused, limits, and standalone stdio/HTTP runs.

In-process tests talk MCP to the server through fastmcp's in-memory client;
the standalone tests start ``python -m openenv_mcp.tool_servers.filesystem`` and connect
with the official SDK client over stdio and streamable HTTP.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from fastmcp import Client as FastMCPClient
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from openenv_mcp.isolation import ServerContext
from openenv_mcp.testing import http_tool_server
from openenv_mcp.tool_servers.filesystem import OUTSIDE, create_server

from support import ROOT

TOOLS = {"list", "read", "write", "edit", "move", "delete", "search"}

pytestmark = pytest.mark.anyio


@pytest.fixture
def layout(tmp_path):
    """A workspace ``ws`` next to an ``outside`` folder, with links leading out."""
    ws = tmp_path / "ws"
    out = tmp_path / "outside"
    (ws / "src").mkdir(parents=True)
    out.mkdir()
    (out / "secret.txt").write_text("top secret\n")
    (ws / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (ws / "src" / "app.py").write_text("import os\n\ndef main():\n    return os.getcwd()  # TODO\n")
    (ws / "src" / "util.py").write_text("def helper():\n    pass  # TODO later\n")
    os.symlink(out, ws / "linkdir")  # a symlinked folder pointing out
    os.symlink(out / "secret.txt", ws / "linkfile")  # a symlinked file pointing out
    os.symlink(out / "nothing-yet.txt", ws / "dangling")  # a dangling link pointing out
    os.symlink("notes.txt", ws / "inner")  # a link that stays inside
    return ws, out


@pytest.fixture
async def fs(layout):
    ws, _ = layout
    async with FastMCPClient(create_server(ServerContext(episode_id="t", workspace=ws))) as client:
        yield client


async def call(client, tool: str, **arguments) -> tuple[str, bool]:
    result = await client.call_tool_mcp(tool, arguments)
    return result.content[0].text, bool(result.is_error)


async def ok(client, tool: str, **arguments) -> str:
    text, error = await call(client, tool, **arguments)
    assert not error, f"{tool}({arguments}) failed: {text}"
    return text


async def fails(client, tool: str, **arguments) -> str:
    text, error = await call(client, tool, **arguments)
    assert error, f"{tool}({arguments}) should have failed, got: {text}"
    return text


# -- surface -----------------------------------------------------------------------
async def test_tools_are_named_and_every_argument_is_described(fs):
    tools = {t.name: t for t in await fs.list_tools()}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) > 30, tool.name
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    assert tools["read"].input_schema["required"] == ["path"]
    assert set(tools["edit"].input_schema["required"]) == {"path", "old_text", "new_text"}


def test_create_server_takes_a_context_or_a_plain_path(tmp_path):
    assert create_server(tmp_path).name == "filesystem"
    assert create_server(str(tmp_path)).name == "filesystem"
    with pytest.raises(NotADirectoryError, match="is not a directory"):
        create_server(tmp_path / "missing")
    with pytest.raises(TypeError, match="unknown limit"):
        create_server(tmp_path, max_reads=3)


# -- list ----------------------------------------------------------------------------
async def test_list_shows_sorted_entries_sizes_folders_and_links(fs, layout):
    _, out = layout
    assert (await ok(fs, "list", path=".")).splitlines() == [
        f"dangling -> {out / 'nothing-yet.txt'}",
        "inner -> notes.txt",
        f"linkdir -> {out}",
        f"linkfile -> {out / 'secret.txt'}",
        "notes.txt (17 bytes)",
        "src/",
    ]


async def test_list_recursive_and_errors(fs, layout):
    ws, _ = layout
    (ws / "src" / "pkg").mkdir()
    (ws / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    assert await ok(fs, "list", path="src", recursive=True) == (
        "app.py (54 bytes)\npkg/\npkg/mod.py (6 bytes)\nutil.py (37 bytes)"
    )
    assert await ok(fs, "list", path="src") == "app.py (54 bytes)\npkg/\nutil.py (37 bytes)"
    (ws / "empty").mkdir()
    assert await ok(fs, "list", path="empty") == "empty/ is empty."
    assert await fails(fs, "list", path="nope") == "Folder 'nope' does not exist."
    assert (
        await fails(fs, "list", path="notes.txt") == "'notes.txt' is a file, not a folder; use read to see its content."
    )


async def test_list_is_capped_with_a_marker(tmp_path):
    for i in range(12):
        (tmp_path / f"f{i:02d}.txt").write_text("x")
    async with FastMCPClient(create_server(tmp_path, max_list_entries=5)) as client:
        lines = (await ok(client, "list")).splitlines()
    assert lines[:5] == [f"f{i:02d}.txt (1 byte)" for i in range(5)]
    assert lines[5] == "[... truncated: 7 more entries not shown; list a sub-folder instead ...]"


# -- read ----------------------------------------------------------------------------
async def test_read_whole_file_ranges_and_errors(fs, layout):
    ws, _ = layout
    assert await ok(fs, "read", path="notes.txt") == "alpha\nbeta\ngamma\n"
    assert await ok(fs, "read", path="notes.txt", start_line=2, max_lines=1) == "beta\n"
    assert await ok(fs, "read", path="./src/../notes.txt", start_line=3) == "gamma\n"
    assert await ok(fs, "read", path="inner") == "alpha\nbeta\ngamma\n"  # a link inside is fine
    assert await fails(fs, "read", path="notes.txt", start_line=9) == (
        "File 'notes.txt' has 3 lines; start_line 9 is past its end."
    )
    assert await fails(fs, "read", path="missing.txt") == "File 'missing.txt' does not exist."
    assert await fails(fs, "read", path="src") == "'src' is a folder, not a file; use list to see its entries."
    (ws / "blob.bin").write_bytes(b"\x89PNG\x00\xff\xfe")
    assert await fails(fs, "read", path="blob.bin") == (
        "File 'blob.bin' is not UTF-8 text (7 bytes, binary); it cannot be read as text."
    )
    assert await fails(fs, "read", path="") == (
        "Path is empty: give a path relative to the workspace root, such as '.' or 'notes.txt'."
    )
    text = await fails(fs, "read", path="notes.txt", start_line=0)
    assert "start_line" in text


async def test_read_large_file_is_cut_with_a_marker_and_can_be_continued(layout):
    ws, _ = layout
    line = "x" * 99 + "\n"
    (ws / "big.txt").write_text(line * 3000)  # 300 000 characters
    async with FastMCPClient(create_server(ws)) as client:
        text = await ok(client, "read", path="big.txt")
        body, marker = text.rsplit("\n[", 1)
        assert len(body) + 1 == 100_000
        assert "[" + marker == (
            "[... truncated: showing 100000 of 300000 characters; continue with start_line=1001 ...]"
        )
        nxt = await ok(client, "read", path="big.txt", start_line=1001, max_lines=2)
        assert nxt == line * 2


# -- write ---------------------------------------------------------------------------
async def test_write_creates_parents_and_overwrites(fs, layout):
    ws, _ = layout
    assert await ok(fs, "write", path="docs/new/readme.md", content="# hi\n") == "Created docs/new/readme.md (5 bytes)."
    assert (ws / "docs/new/readme.md").read_text() == "# hi\n"
    assert await ok(fs, "write", path="notes.txt", content="é") == "Overwrote notes.txt (2 bytes)."
    assert (ws / "notes.txt").read_text() == "é"
    assert await fails(fs, "write", path="src", content="x") == "'src' is a folder; give a file path."


async def test_write_size_is_capped(tmp_path):
    async with FastMCPClient(create_server(tmp_path, max_write_chars=10)) as client:
        assert await fails(client, "write", path="a.txt", content="x" * 11) == (
            "Content is 11 characters; the limit is 10."
        )
    assert not (tmp_path / "a.txt").exists()


# -- edit ----------------------------------------------------------------------------
async def test_edit_replaces_exactly_one_occurrence(fs, layout):
    ws, _ = layout
    assert (
        await ok(fs, "edit", path="notes.txt", old_text="beta\n", new_text="BETA\n")
        == "Replaced 1 occurrence in notes.txt."
    )
    assert (ws / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"


async def test_edit_fails_clearly_and_changes_nothing_when_missing_or_ambiguous(fs, layout):
    ws, _ = layout
    (ws / "dup.txt").write_text("a = 1\nb = 1\n")
    assert await fails(fs, "edit", path="dup.txt", old_text="= 2", new_text="= 3") == (
        "old_text not found in 'dup.txt'; nothing changed. Read the file and copy the text exactly."
    )
    assert await fails(fs, "edit", path="dup.txt", old_text="= 1", new_text="= 3") == (
        "old_text occurs 2 times in 'dup.txt'; nothing changed. Include more surrounding text to make it "
        "unique, or set replace_all to true."
    )
    assert (ws / "dup.txt").read_text() == "a = 1\nb = 1\n"
    assert await ok(fs, "edit", path="dup.txt", old_text="= 1", new_text="= 3", replace_all=True) == (
        "Replaced 2 occurrences in dup.txt."
    )
    assert (ws / "dup.txt").read_text() == "a = 3\nb = 3\n"
    assert await fails(fs, "edit", path="dup.txt", old_text="", new_text="x") == (
        "old_text is empty; give the exact text to replace (use write to replace a whole file)."
    )
    assert await fails(fs, "edit", path="nope.txt", old_text="a", new_text="b") == (
        "File 'nope.txt' does not exist; use write to create it."
    )


# -- move ----------------------------------------------------------------------------
async def test_move_renames_files_and_folders(fs, layout):
    ws, _ = layout
    assert await ok(fs, "move", source="notes.txt", destination="archive/2024/notes.md") == (
        "Moved notes.txt -> archive/2024/notes.md."
    )
    assert not (ws / "notes.txt").exists() and (ws / "archive/2024/notes.md").read_text().startswith("alpha")
    assert await ok(fs, "move", source="src", destination="lib") == "Moved src -> lib."
    assert (ws / "lib/app.py").is_file()
    assert await ok(fs, "move", source="inner", destination="inner2") == "Moved inner -> inner2."
    assert os.readlink(ws / "inner2") == "notes.txt"  # the link moved, not its target


async def test_move_refuses_clobbering_and_nonsense(fs, layout):
    ws, _ = layout
    (ws / "other.txt").write_text("other\n")
    assert await fails(fs, "move", source="notes.txt", destination="other.txt") == (
        "Destination 'other.txt' already exists; set overwrite to true to replace it."
    )
    assert await fails(fs, "move", source="notes.txt", destination="src") == (
        "Destination 'src' is an existing folder; give the full new path, e.g. 'src/notes.txt'."
    )
    assert await fails(fs, "move", source="missing", destination="x") == "Source 'missing' does not exist."
    assert await fails(fs, "move", source="src", destination="src/inner/src") == (
        "Cannot move folder 'src' into itself ('src/inner/src')."
    )
    assert await fails(fs, "move", source=".", destination="x") == "The workspace root itself cannot be moved."
    assert (ws / "other.txt").read_text() == "other\n"
    assert await ok(fs, "move", source="notes.txt", destination="other.txt", overwrite=True) == (
        "Moved notes.txt -> other.txt."
    )
    assert (ws / "other.txt").read_text().startswith("alpha")


# -- delete --------------------------------------------------------------------------
async def test_delete_files_folders_and_links(fs, layout):
    ws, out = layout
    assert await ok(fs, "delete", path="src/util.py") == "Deleted src/util.py."
    assert await fails(fs, "delete", path="src") == (
        "Folder 'src' is not empty (1 entries); set recursive to true to delete it with its contents."
    )
    assert await ok(fs, "delete", path="src", recursive=True) == "Deleted folder src and 1 entries in it."
    (ws / "empty").mkdir()
    assert await ok(fs, "delete", path="empty") == "Deleted folder empty."
    assert await ok(fs, "delete", path="inner") == "Deleted inner."
    assert (ws / "notes.txt").is_file()  # the link went, not the file it pointed to
    assert await fails(fs, "delete", path=".") == (
        "The workspace root itself cannot be deleted; delete the entries inside it."
    )
    assert await fails(fs, "delete", path="src") == "'src' does not exist."


# -- search --------------------------------------------------------------------------
async def test_search_plain_regex_glob_and_case(fs):
    assert await ok(fs, "search", pattern="TODO") == (
        "src/app.py:4:     return os.getcwd()  # TODO\nsrc/util.py:2:     pass  # TODO later"
    )
    assert await ok(fs, "search", pattern=r"^def \w+", regex=True, path="src") == (
        "src/app.py:3: def main():\nsrc/util.py:1: def helper():"
    )
    assert await ok(fs, "search", pattern="todo", glob="util*", case_sensitive=False) == (
        "src/util.py:2:     pass  # TODO later"
    )
    assert await ok(fs, "search", pattern="beta", path="notes.txt") == "notes.txt:2: beta"
    assert await ok(fs, "search", pattern="zzz") == "No matches for 'zzz' in '.'."
    assert await fails(fs, "search", pattern="(", regex=True) == (
        "Invalid regular expression '(': missing ), unterminated subpattern at position 0."
    )
    assert await fails(fs, "search", pattern="") == "pattern is empty; give the text to look for."


async def test_search_never_follows_links_out_and_skips_binaries(fs, layout):
    ws, _ = layout
    (ws / "blob.bin").write_bytes(b"secret\x00\x01")
    assert await ok(fs, "search", pattern="secret") == "No matches for 'secret' in '.'."


async def test_search_output_is_bounded(tmp_path):
    (tmp_path / "many.txt").write_text("hit\n" * 50 + "hit " + "y" * 500 + "\n")
    async with FastMCPClient(create_server(tmp_path, max_search_results=10, max_line_chars=20)) as client:
        lines = (await ok(client, "search", pattern="hit")).splitlines()
        assert lines[:10] == [f"many.txt:{n}: hit" for n in range(1, 11)]
        assert lines[10] == "[... truncated: 41 more matching lines not shown; narrow the search with path or glob ...]"
        lines = (await ok(client, "search", pattern="y")).splitlines()
        assert lines == ["many.txt:51: hit " + "y" * 16 + " [... line truncated ...]"]
    async with FastMCPClient(create_server(tmp_path, max_search_file_bytes=100)) as client:
        assert await ok(client, "search", pattern="hit") == (
            "No matches for 'hit' in '.'.\n[1 file(s) larger than 100 bytes skipped]"
        )


# -- escapes -------------------------------------------------------------------------
def test_the_refusal_message_is_what_agents_see():
    assert OUTSIDE.format(path="../x") == (
        "Access denied: path '../x' is outside the workspace. Use a path relative to the workspace root, "
        "such as 'notes.txt' or 'src/app.py'."
    )


ESCAPES = [
    "..",
    "../outside/secret.txt",
    "src/../../outside/secret.txt",
    "/etc/passwd",
    "~/x.txt",
    "linkdir",  # symlinked folder pointing out
    "linkdir/secret.txt",  # a file below it
    "linkdir/new.txt",  # a new file below it (write must not create it)
    "linkfile",  # symlinked file pointing out
    "dangling",  # dangling link pointing out (write would create the target)
]


def _calls(path: str) -> list[tuple[str, dict]]:
    return [
        ("list", {"path": path}),
        ("read", {"path": path}),
        ("write", {"path": path, "content": "pwned"}),
        ("edit", {"path": path, "old_text": "top", "new_text": "pwned"}),
        ("move", {"source": path, "destination": "stolen.txt"}),
        ("move", {"source": "notes.txt", "destination": path}),
        ("delete", {"path": path, "recursive": True}),
        ("search", {"pattern": "secret", "path": path}),
    ]


@pytest.mark.parametrize("path", ESCAPES)
async def test_every_tool_refuses_every_escape_with_the_exact_message(fs, layout, path):
    ws, out = layout
    before = sorted((p.relative_to(out).as_posix(), p.read_bytes()) for p in out.rglob("*") if p.is_file())
    for tool, arguments in _calls(path):
        text, error = await call(fs, tool, **arguments)
        assert error and text == OUTSIDE.format(path=path), f"{tool}({arguments}) -> {text!r}"
    after = sorted((p.relative_to(out).as_posix(), p.read_bytes()) for p in out.rglob("*") if p.is_file())
    assert after == before, "something outside the workspace changed"
    assert not (ws / "stolen.txt").exists() and (ws / "notes.txt").is_file()
    assert (await ok(fs, "read", path="notes.txt")).startswith("alpha")  # still usable


async def test_nul_bytes_and_odd_input_are_errors_not_crashes(fs):
    assert await fails(fs, "read", path="a\x00b") == "Path 'a\\x00b' contains a NUL byte."
    text, error = await call(fs, "read", path=5)
    assert error and "path" in text
    text, error = await call(fs, "nosuchtool", path=".")
    assert error
    assert await ok(fs, "list", path="src") == "app.py (54 bytes)\nutil.py (37 bytes)"


async def test_pipes_are_refused_instead_of_blocking_and_os_errors_name_the_agents_path(fs, layout):
    ws, _ = layout
    os.mkfifo(ws / "pipe")
    message = "'pipe' is not a regular file (a pipe, socket or device); it cannot be opened."
    with anyio.fail_after(10):
        assert await fails(fs, "read", path="pipe") == message
        assert await fails(fs, "write", path="pipe", content="x") == message
        assert await fails(fs, "edit", path="pipe", old_text="a", new_text="b") == message
        assert await ok(fs, "search", pattern="x", path=".") == "No matches for 'x' in '.'."
    long = "a" * 5000
    assert await fails(fs, "read", path=long) == f"read failed for {long!r}: File name too long."
    assert await fails(fs, "write", path=long, content="x") == f"write failed for {long!r}: File name too long."
    assert await ok(fs, "read", path="notes.txt") == "alpha\nbeta\ngamma\n"


async def test_a_link_created_later_is_refused_too(fs, layout):
    ws, out = layout
    assert await ok(fs, "write", path="later/x.txt", content="x") == "Created later/x.txt (1 byte)."
    os.symlink(out, ws / "later" / "door")
    assert await fails(fs, "write", path="later/door/x.txt", content="x") == OUTSIDE.format(path="later/door/x.txt")
    assert not (out / "x.txt").exists()


# -- standalone ------------------------------------------------------------------------
def test_cli_help_and_bad_root(tmp_path):
    def run(*a):
        return subprocess.run(
            [sys.executable, "-m", "openenv_mcp.tool_servers.filesystem", *a],  # noqa: E731
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )

    result = run("--help")
    assert result.returncode == 0
    for flag in ("--root", "--transport", "--host", "--port"):
        assert flag in result.stdout
    result = run("--root", str(tmp_path / "missing"))
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: --root {str(tmp_path / 'missing')!r} is not a directory; create it first"


async def test_standalone_stdio_with_the_official_sdk_client(layout):
    ws, out = layout
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "openenv_mcp.tool_servers.filesystem", "--root", str(ws), "--namespace", ""],
        cwd=str(ROOT),
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            result = await client.call_tool("write", {"path": "from-ide.txt", "content": "hello\n"})
            assert result.content[0].text == "Created from-ide.txt (6 bytes)."
            result = await client.call_tool("read", {"path": "../outside/secret.txt"})
            assert result.is_error and result.content[0].text == OUTSIDE.format(path="../outside/secret.txt")
            result = await client.call_tool("search", {"pattern": "hello"})
            assert result.content[0].text == "from-ide.txt:1: hello"
    assert (ws / "from-ide.txt").read_text() == "hello\n"


async def test_standalone_http_with_the_official_sdk_client(layout):
    ws, _ = layout
    async with http_tool_server("filesystem", "--root", str(ws), "--namespace", "") as url, Client(url) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        result = await client.call_tool("list", {"path": "src"})
        assert result.content[0].text == "app.py (54 bytes)\nutil.py (37 bytes)"
        result = await client.call_tool("delete", {"path": "/etc/passwd"})
        assert result.is_error and result.content[0].text == OUTSIDE.format(path="/etc/passwd")


# -- descriptor-relative resolution (both resolvers) ------------------------------------
from openenv_mcp.tool_servers.filesystem import NOT_REGULAR  # noqa: E402
from openenv_mcp.tool_servers.filesystem.fdpath import HAVE_OPENAT2, Outside, Root, split  # noqa: E402

RESOLVERS = [pytest.param(True, id="openat2"), pytest.param(False, id="walk")]


def test_split_cleans_lexically_and_refuses_what_climbs_out():
    assert split(".") == () and split("./a//b/./") == ("a", "b") and split("a/../b") == ("b",)
    for bad in ("..", "../x", "a/../../x", "/etc", "~root"):
        with pytest.raises(Outside):
            split(bad)
    with pytest.raises(ValueError, match="^Path is empty"):
        split("  ")


@pytest.mark.parametrize("kernel", RESOLVERS)
def test_root_follows_inner_links_and_refuses_every_way_out(layout, kernel):
    if kernel and not HAVE_OPENAT2:
        pytest.skip("this kernel has no openat2")
    ws, out = layout
    (ws / "src" / "up").symlink_to("../notes.txt")  # relative, stays inside
    (ws / "src" / "climb").symlink_to("../../outside")  # relative, climbs out
    (ws / "chain").symlink_to("src/up")  # a link to a link
    (ws / "loop1").symlink_to("loop2")
    (ws / "loop2").symlink_to("loop1")
    root = Root(str(ws), use_openat2=kernel)

    def read(path: str) -> bytes:
        fd = root.open(split(path), os.O_RDONLY)
        try:
            return os.read(fd, 100)
        finally:
            os.close(fd)

    assert read("inner") == read("chain") == read("src/up") == b"alpha\nbeta\ngamma\n"
    for escape in ("linkdir/secret.txt", "linkfile", "dangling", "src/climb/secret.txt", "src/climb"):
        with pytest.raises(Outside):
            read(escape)
    with pytest.raises(OSError) as loop:
        read("loop1")
    assert loop.value.errno == 40  # ELOOP


@pytest.mark.parametrize("kernel", RESOLVERS)
def test_root_never_follows_a_link_swapped_in_for_a_folder(layout, kernel):
    """What the walk opens is the descriptor it checked: a folder replaced by a link to the host
    between two calls is refused on the next open, never followed."""
    if kernel and not HAVE_OPENAT2:
        pytest.skip("this kernel has no openat2")
    ws, out = layout
    root = Root(str(ws), use_openat2=kernel)
    with root.fd() as top:
        parent = root.parent(top, ("src", "new.txt"), create=True)
        os.rename(ws / "src", ws / "src.old")
        os.symlink(out, ws / "src")  # the swap: 'src' now leads out
        try:
            fd = root.create(parent, "new.txt", os.O_WRONLY)  # the descriptor still names the real folder
            os.close(fd)
        finally:
            os.close(parent)
        with pytest.raises(Outside):
            root.parent(top, ("src", "x.txt"), create=True)
    assert (ws / "src.old" / "new.txt").is_file() and not (out / "new.txt").exists()


async def test_created_files_and_folders_go_to_the_owner_and_existing_ones_keep_theirs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("giving files to another uid needs root")
    (tmp_path / "old.txt").write_text("old")
    async with FastMCPClient(create_server(tmp_path, owner=(65534, 65534))) as client:
        await ok(client, "write", path="a/b/new.txt", content="x")
        await ok(client, "write", path="old.txt", content="changed")
        await ok(client, "move", source="old.txt", destination="c/old.txt")
    for path in ("a", "a/b", "a/b/new.txt", "c"):
        assert (tmp_path / path).stat().st_uid == 65534, path
    assert (tmp_path / "c" / "old.txt").stat().st_uid == 0  # never chowned: it existed


# -- bounded reads, edits, walks ----------------------------------------------------------
async def test_read_streams_lines_split_exactly_like_splitlines_across_chunk_edges(tmp_path):
    from openenv_mcp.tool_servers.filesystem.fdops import CHUNK

    text = "x" * (CHUNK - 1) + "\r\n" + "é" * 10 + "\u2028mid\x0bv\x0cf\x1cg\x85h\rlast\r\nz"
    (tmp_path / "t.txt").write_text(text, newline="")
    lines = text.splitlines(keepends=True)
    async with FastMCPClient(create_server(tmp_path, max_read_chars=10 * CHUNK)) as client:
        for start in range(1, len(lines) + 1):
            assert await ok(client, "read", path="t.txt", start_line=start, max_lines=2) == "".join(
                lines[start - 1 : start + 1]
            ), start
        assert await fails(client, "read", path="t.txt", start_line=len(lines) + 1) == (
            f"File 't.txt' has {len(lines)} lines; start_line {len(lines) + 1} is past its end."
        )


async def test_read_stops_at_the_scan_budget_and_says_so(tmp_path):
    (tmp_path / "big.txt").write_text("line\n" * 1000)
    async with FastMCPClient(create_server(tmp_path, max_read_scan_bytes=100, max_read_chars=50)) as client:
        assert await ok(client, "read", path="big.txt") == "line\n" * 10 + (
            "[... truncated: showing 50 of at least 100 characters; continue with start_line=11 ...]"
        )
        assert await fails(client, "read", path="big.txt", start_line=500) == (
            "start_line 500 is past the first 20 lines of 'big.txt', all that read scans (100 bytes); "
            "the file is 5000 bytes."
        )


async def test_edit_refuses_by_size_before_reading_or_building(tmp_path):
    (tmp_path / "a.txt").write_text("ab" * 30)
    with open(tmp_path / "sparse.bin", "wb") as f:
        f.truncate(1 << 30)
    async with FastMCPClient(create_server(tmp_path, max_write_chars=100)) as client:
        assert await fails(client, "edit", path="a.txt", old_text="a", new_text="xyz", replace_all=True) == (
            "The result would be 120 characters; the limit is 100."
        )
        assert (tmp_path / "a.txt").read_text() == "ab" * 30
        assert await fails(client, "edit", path="sparse.bin", old_text="a", new_text="b") == (
            "File 'sparse.bin' is 1073741824 bytes; edit changes files of at most 100 characters. "
            "Use write to replace it."
        )


async def test_deep_trees_are_listed_searched_and_deleted_without_recursion(tmp_path):
    deep = tmp_path
    for _ in range(700):
        deep = deep / "d"
        os.mkdir(deep)
    (deep / "bottom.txt").write_text("needle\n")
    async with FastMCPClient(create_server(tmp_path, max_depth=1000)) as client:
        listing = (await ok(client, "list", recursive=True)).splitlines()
        assert len(listing) == 701 and listing[-1] == "d/" * 700 + "bottom.txt (7 bytes)"
        assert await ok(client, "search", pattern="needle") == "d/" * 700 + "bottom.txt:1: needle"
        assert await ok(client, "delete", path="d", recursive=True) == "Deleted folder d and 700 entries in it."
    assert not (tmp_path / "d").exists()


async def test_walk_budgets_are_visible(tmp_path):
    for i in range(30):
        (tmp_path / f"f{i:02d}.txt").write_text("hit\n")
    async with FastMCPClient(create_server(tmp_path, max_walk_entries=10)) as client:
        assert (await ok(client, "list")).splitlines()[-1] == (
            "[... truncated: listing stopped after 10 entries; list a sub-folder instead ...]"
        )
        assert (await ok(client, "search", pattern="hit")).splitlines()[-1] == (
            "[search stopped after 10 entries; narrow it with path or glob]"
        )


async def test_search_uses_linear_time_regex_and_names_unsupported_features(fs, layout):
    ws, _ = layout
    (ws / "a.txt").write_text("a" * 40 + "\n")
    assert await ok(fs, "search", pattern="(a|a)*b", regex=True, path="a.txt") == (
        "No matches for '(a|a)*b' in 'a.txt'."
    )
    assert await ok(fs, "search", pattern="(?i)ALPHA", regex=True, path="notes.txt") == "notes.txt:1: alpha"
    assert await fails(fs, "search", pattern="a(?=b)", regex=True) == (
        "Regular expression 'a(?=b)' is not supported: invalid perl operator: (?=. Search matches in linear "
        "time (RE2 syntax), without backreferences or look-around."
    )
    assert await ok(fs, "search", pattern="a.b*", path="notes.txt") == "No matches for 'a.b*' in 'notes.txt'."


async def test_special_files_are_refused_by_every_tool_that_opens_them(fs, layout):
    import socket

    ws, _ = layout
    os.mkfifo(ws / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(ws / "sock"))
    try:
        with anyio.fail_after(10):
            for path in ("pipe", "sock"):
                for tool, args in (
                    ("read", {}),
                    ("write", {"content": "x"}),
                    ("edit", {"old_text": "a", "new_text": "b"}),
                ):
                    text = await fails(fs, tool, path=path, **args)
                    assert text == NOT_REGULAR.format(path=path), (tool, path, text)
            assert await ok(fs, "search", pattern="x") == "No matches for 'x' in '.'."
    finally:
        sock.close()


async def test_a_dangling_link_inside_is_not_written_through(fs, layout):
    ws, _ = layout
    os.symlink("missing.txt", ws / "soon")
    assert await fails(fs, "write", path="soon", content="x") == (
        "'soon' is a link to a missing file or appeared meanwhile; nothing was written. Write to the file's own path."
    )
    assert not (ws / "missing.txt").exists()


# -- lean stdio mode (what the coding env starts in its sandbox) ----------------------------
async def test_lean_mode_lists_exactly_what_fastmcp_lists(tmp_path):
    import json

    from openenv_mcp.tool_servers.filesystem.stdio import TOOLS_FILE

    listed = [
        t.to_mcp_tool().model_dump(by_alias=True, exclude_none=True, mode="json")
        for t in await create_server(tmp_path).list_tools()
    ]
    for tool in listed:
        tool.pop("_meta", None)
    assert json.loads(TOOLS_FILE.read_text()) == listed


async def test_lean_stdio_with_the_official_sdk_client(layout):
    ws, out = layout
    params = StdioServerParameters(
        command=sys.executable,
        cwd=str(ROOT),
        args=["-m", "openenv_mcp.tool_servers.filesystem", "--root", str(ws), "--lean"],
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            result = await client.call_tool("write", {"path": "lean/new.txt", "content": "hello\n"})
            assert not result.is_error and result.content[0].text == "Created lean/new.txt (6 bytes)."
            result = await client.call_tool("read", {"path": "linkdir/secret.txt"})
            assert result.is_error and result.content[0].text == OUTSIDE.format(path="linkdir/secret.txt")
            result = await client.call_tool("search", {"pattern": "^(a|a)*q$", "regex": True})
            assert result.content[0].text == "No matches for '^(a|a)*q$' in '.'."
    assert (ws / "lean" / "new.txt").read_text() == "hello\n"


PEAK_READ = """
import asyncio, json, resource, sys
from fastmcp import Client
from openenv_mcp.tool_servers.filesystem import create_server

async def main():
    async with Client(create_server(sys.argv[1])) as client:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = await client.call_tool_mcp("read", {"path": "big", "max_lines": 1})
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"grew_mb": (after - before) / 1024, "text": result.content[0].text[-120:]}))

asyncio.run(main())
"""


def test_reading_one_line_of_a_sparse_gigabyte_file_keeps_memory_bounded(tmp_path):
    """The old read loaded the whole file (2.2 GB peak for 1 GB of zeros); reads stream now."""
    import json

    with open(tmp_path / "big", "wb") as f:
        f.truncate(1 << 30)
    done = subprocess.run(
        [sys.executable, "-c", PEAK_READ, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["grew_mb"] < 150, out
    assert out["text"].endswith(
        "[... truncated: showing 100000 of at least 64000000 characters; continue with start_line=1 ...]"
    ), out


SWAP = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = (p.encode() for p in sys.argv[1:3])
while True:
    libc.renameat2(-100, a, -100, b, 2)  # RENAME_EXCHANGE
"""


@contextlib.contextmanager
def exchanging(a: Path, b: Path):
    """Another process swaps ``a`` and ``b`` (renameat2 RENAME_EXCHANGE) in a loop, as agent code would."""
    proc = subprocess.Popen([sys.executable, "-c", SWAP, str(a), str(b)])
    try:
        time.sleep(0.2)
        yield
    finally:
        proc.kill()
        proc.wait()


async def test_in_process_tools_cannot_be_raced_out_by_a_folder_symlink_exchange(layout):
    """The real race on the in-process server: another thread swaps folder 'd' and a link 'l' to a folder
    outside in a loop while every tool works on 'd/...'; nothing outside is read, written or removed."""
    ws, out = layout
    (ws / "d").mkdir()
    (ws / "d" / "secret.txt").write_text("decoy\n")
    (out / "owned.txt").write_text("keep\n")
    os.symlink(out, ws / "l")
    before = sorted((p.name, p.read_bytes(), p.stat().st_mtime_ns) for p in out.iterdir())
    texts = []
    with exchanging(ws / "d", ws / "l"):
        async with FastMCPClient(create_server(ws)) as client:
            for i in range(150):
                for tool, args in (
                    ("write", {"path": f"d/x{i}.txt", "content": "agent\n"}),
                    ("read", {"path": "d/secret.txt"}),
                    ("edit", {"path": "d/secret.txt", "old_text": "top", "new_text": "pwned"}),
                    ("search", {"pattern": "secret", "path": "d"}),
                    ("move", {"source": "d/owned.txt", "destination": "stolen.txt"}),
                    ("delete", {"path": "d/owned.txt"}),
                ):
                    texts.append((await call(client, tool, **args))[0])
    assert not any("top secret" in t for t in texts)
    assert sorted((p.name, p.read_bytes(), p.stat().st_mtime_ns) for p in out.iterdir()) == before
    assert any(t.startswith("Created d/x") for t in texts)


async def test_in_process_read_is_not_blocked_by_a_fifo_exchanged_in_by_a_race(tmp_path):
    """Another thread swaps a regular file and a FIFO in a loop; read refuses the FIFO (non-blocking open,
    fstat) or reads the file, and never waits for a writer (the old read blocked the event loop)."""
    (tmp_path / "f").write_text("text\n")
    os.mkfifo(tmp_path / "p")
    stop, blocked = threading.Event(), threading.Event()

    def unblock() -> None:  # if a read waits on the FIFO, a writer lets it go on (and the test fails)
        if not stop.wait(20):
            blocked.set()
            while not stop.is_set():
                for name in ("f", "p"):
                    try:
                        os.close(os.open(tmp_path / name, os.O_WRONLY | os.O_NONBLOCK))
                    except OSError:
                        pass
                time.sleep(0.01)

    watchdog = threading.Thread(target=unblock, daemon=True)
    watchdog.start()
    texts = set()
    try:
        with exchanging(tmp_path / "f", tmp_path / "p"):
            async with FastMCPClient(create_server(tmp_path)) as client:
                for _ in range(300):
                    texts.add((await call(client, "read", path="f"))[0])
    finally:
        stop.set()
        watchdog.join()
    assert not blocked.is_set(), "read blocked on a FIFO swapped in under it"
    assert texts <= {"text\n", NOT_REGULAR.format(path="f")} and "text\n" in texts
