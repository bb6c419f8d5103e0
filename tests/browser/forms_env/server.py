"""Tools with rich input schemas (enums, arrays, nested objects, Optional, numbers, booleans) and an image result."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Literal

from fastmcp import FastMCP
from fastmcp.utilities.types import Image
from pydantic import BaseModel, Field

server = FastMCP("forms")


class Address(BaseModel):
    city: str = Field(description="City name.")
    zip: str | None = Field(default=None, description="Postal code.")


class Item(BaseModel):
    sku: str
    count: int = Field(ge=1)


@server.tool
def submit(
    quantity: int = Field(ge=1, le=100, description="How many."),
    color: Literal["red", "green", "blue"] = Field(description="Colour."),
    address: Address = Field(description="Where to ship."),
    price: float = 1.0,
    express: bool = False,
    tags: list[str] | None = None,
    items: list[Item] | None = None,
    note: str | None = None,
) -> dict:
    """Submit an order; returns what was received."""
    out = {
        "quantity": quantity,
        "price": price,
        "color": color,
        "express": express,
        "address": address.model_dump(exclude_none=True),
    }
    if tags is not None:
        out["tags"] = tags
    if items is not None:
        out["items"] = [i.model_dump() for i in items]
    if note is not None:
        out["note"] = note
    return out


@server.tool
def pick(level: Literal[1, 2, 3], target: int | str, confirm: bool) -> dict:
    """Numeric enum, a union without null, a required boolean; returns what was received."""
    return {"level": level, "target": target, "confirm": confirm}


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


@server.tool
def swatch(color: Literal["red", "green", "blue"]) -> Image:
    """A 24x24 PNG of the colour."""
    rgb = {"red": (220, 40, 40), "green": (40, 160, 60), "blue": (50, 80, 200)}[color]
    return Image(data=_png(24, 24, rgb), format="png")


@server.tool
def fail(message: str) -> str:
    """Always raises (to see an error result)."""
    raise ValueError(message)


assert base64  # keep the import for readers decoding results by hand
