"""Comparisons the tasks' checks share."""

from __future__ import annotations

import re


def norm(text: object) -> str:
    """Lower case, single spaces, no surrounding punctuation."""
    return re.sub(r"\s+", " ", str(text)).strip().strip(".,;:!\"'").lower()


def same_answer(answer: str | None, expected: object) -> bool:
    """The submitted answer names ``expected`` and nothing else (case and spacing aside; numbers
    compared as numbers)."""
    if answer is None:
        return False
    got, want = norm(answer), norm(expected)
    if got == want:
        return True
    try:
        return abs(float(got.replace(",", "").lstrip("€$").rstrip("eur").strip()) - float(want)) < 1e-6
    except ValueError:
        return False


def new_rows(ep: object, state: dict, app: str, table: str) -> list[dict]:
    """Rows of ``app.table`` that were not there after seeding."""
    before = {r["id"] for r in ep.initial[app][table]}  # type: ignore[attr-defined]
    return [r for r in state[app][table] if r["id"] not in before]


def order_lines(state: dict, order_id: int) -> list[tuple[int, str, int]]:
    """``(product id, size, qty)`` of an order, sorted."""
    return sorted(
        (i["product_id"], i["size"], i["qty"]) for i in state["shop"]["order_items"] if i["order_id"] == order_id
    )


def one_new_order(ep: object, state: dict) -> tuple[dict | None, dict]:
    """The single order placed in this episode (``None`` when none or several), and info."""
    orders = new_rows(ep, state, "shop", "orders")
    if len(orders) != 1:
        return None, {"orders_placed": len(orders)}
    return orders[0], {"orders_placed": 1}


def changed_rows(ep: object, state: dict, app: str, table: str) -> list[tuple[dict, dict]]:
    """``(before, after)`` of the seeded rows of ``app.table`` that changed."""
    after = {r["id"]: r for r in state[app][table]}
    return [(r, after[r["id"]]) for r in ep.initial[app][table] if r["id"] in after and after[r["id"]] != r]  # type: ignore[attr-defined]
