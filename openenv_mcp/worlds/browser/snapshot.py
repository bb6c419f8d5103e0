"""Reading Playwright MCP's accessibility snapshots, as an agent would: find an element by its role
and accessible name (or the text around it) and get the ``ref`` to act on.

A snapshot is the YAML list ``browser_snapshot`` returns (``- button "Save" [ref=e12]``, nested by
indentation, ``/url:`` and ``text:`` properties). Refs change from page to page and from one
episode's data to another's: scripted solutions find them in the snapshot they just got.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["Node", "Snapshot", "SnapshotError", "snapshot_text"]

_LINE = re.compile(r"^(?P<indent> *)- (?P<rest>.*)$")
_HEAD = re.compile(
    r'^(?P<role>[a-z]+)(?: "(?P<name>(?:[^"\\]|\\.)*)")?(?P<attrs>(?: \[[^\]]*\])*)(?P<colon>:)?(?: (?P<text>.*))?$'
)
_ATTR = re.compile(r"\[([^\]=]+)(?:=([^\]]*))?\]")


class SnapshotError(LookupError):
    """The element a script looked for is not in the snapshot (the message shows what is)."""


@dataclass
class Node:
    role: str
    name: str = ""
    ref: str | None = None
    attrs: dict[str, str] = field(default_factory=dict)
    text: str = ""
    url: str | None = None
    children: list[Node] = field(default_factory=list)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()

    @property
    def all_text(self) -> str:
        """The node's name and text and all of its descendants', space-joined."""
        return " ".join(p for n in self.walk() for p in (n.name, n.text) if p)

    def find_all(self, role: str | None = None, name: str | None = None, *, contains: str | None = None) -> list[Node]:
        """Descendants (this node included) with ``role``, exactly ``name``, and ``contains`` in their text."""
        out = []
        for node in self.walk():
            if role is not None and node.role != role:
                continue
            if name is not None and node.name != name:
                continue
            if contains is not None and contains.lower() not in node.all_text.lower():
                continue
            out.append(node)
        return out

    def find(self, role: str | None = None, name: str | None = None, *, contains: str | None = None) -> Node:
        """The first match of :meth:`find_all`, or a :class:`SnapshotError`."""
        found = self.find_all(role, name, contains=contains)
        if not found:
            what = " ".join(
                p
                for p in (role, repr(name) if name is not None else None, contains and f"containing {contains!r}")
                if p
            )
            raise SnapshotError(f"no {what} in the snapshot; it has: {self.outline()}")
        return found[0]

    def ref_of(self, role: str | None = None, name: str | None = None, *, contains: str | None = None) -> str:
        node = self.find(role, name, contains=contains)
        if node.ref is None:
            raise SnapshotError(f"{node.role} {node.name!r} has no ref")
        return node.ref

    def outline(self, limit: int = 60) -> str:
        items = [f"{n.role} {n.name!r}" for n in self.walk() if n.ref and n.role in _ACTIONABLE]
        return ", ".join(items[:limit]) + (" ..." if len(items) > limit else "")


_ACTIONABLE = {
    "button",
    "link",
    "textbox",
    "combobox",
    "checkbox",
    "radio",
    "searchbox",
    "spinbutton",
    "heading",
    "row",
}


def snapshot_text(tool_result_text: str) -> str:
    """The YAML of a ``browser_snapshot`` result (between its ```yaml fences)."""
    match = re.search(r"```yaml\n(.*?)```", tool_result_text, re.S)
    if match is None:
        raise SnapshotError("the result holds no snapshot (```yaml ... ```)")
    return match.group(1)


class Snapshot(Node):
    """The root of a parsed snapshot (role ``document``)."""

    @classmethod
    def parse(cls, text: str) -> Snapshot:
        root = cls(role="document")
        stack: list[tuple[int, Node]] = [(-1, root)]
        for raw in text.splitlines():
            m = _LINE.match(raw)
            if m is None:
                continue
            indent, rest = len(m["indent"]), m["rest"]
            if rest.startswith("'"):  # YAML quotes a line holding ": " ('...' or '...': with children)
                end = rest.rfind("'")
                if end > 0:
                    rest = rest[1:end].replace("''", "'") + rest[end + 1 :]
            while stack[-1][0] >= indent:
                stack.pop()
            parent = stack[-1][1]
            if rest.startswith("/url:"):
                parent.url = rest[5:].strip()
                continue
            if rest.startswith("text:"):
                parent.children.append(Node(role="text", text=_unquote(rest[5:].strip())))
                continue
            head = _HEAD.match(rest)
            if head is None:
                parent.children.append(Node(role="text", text=_unquote(rest.strip())))
                continue
            attrs = {k: (v or "") for k, v in _ATTR.findall(head["attrs"] or "")}
            node = Node(
                role=head["role"],
                name=(head["name"] or "").replace('\\"', '"'),
                ref=attrs.pop("ref", None),
                attrs=attrs,
                text=_unquote((head["text"] or "").strip()),
            )
            parent.children.append(node)
            stack.append((indent, node))
        return root

    @classmethod
    def of_result(cls, tool_result_text: str) -> Snapshot:
        return cls.parse(snapshot_text(tool_result_text))


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text
