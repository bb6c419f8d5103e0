"""Planted bug: count_words declares an outputSchema with an integer count and returns the count as a string
in structuredContent. Caught by call.content naming the tool and the value."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _kit  # noqa: E402

OUTPUT = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}


def count_words(a):
    n = len(str(a.get("text", "")).split())
    return _kit.text_result(str(n), structured={"count": n if _kit.FIXED else str(n)})


_kit.serve(
    "output-schema",
    [(_kit.tool("count_words", {"text": _kit.STR}, "Count the words of a text.", output_schema=OUTPUT), count_words)],
)
