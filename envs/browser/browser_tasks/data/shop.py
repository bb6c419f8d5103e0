"""Seeded data of the shop (Trailhead): a catalogue of about 70 products in 10 categories, saved
addresses, coupons and past orders; names, prices, stock and ratings drawn from the episode's seed."""

from __future__ import annotations

import random
from typing import Any

from openenv_mcp.worlds.browser.seeding import CITIES, STREETS, person

ADJECTIVES = (
    "Summit",
    "Ridge",
    "Alpine",
    "Trail",
    "Canyon",
    "Glacier",
    "Forest",
    "Harbor",
    "Nordic",
    "Meadow",
    "Boulder",
    "Tundra",
)
CATEGORIES = {
    "Rain jackets": ("Rain Jacket", ("XS", "S", "M", "L", "XL"), (6900, 24900)),
    "Backpacks": ("Backpack", ("One size",), (3900, 18900)),
    "Tents": ("Tent", ("One size",), (9900, 52900)),
    "Sleeping bags": ("Sleeping Bag", ("One size",), (5900, 29900)),
    "Hiking boots": ("Hiking Boot", ("40", "41", "42", "43", "44", "45"), (7900, 23900)),
    "T-shirts": ("Merino T-shirt", ("XS", "S", "M", "L", "XL"), (2400, 7900)),
    "Hats": ("Wool Cap", ("One size",), (1500, 4500)),
    "Water bottles": ("Water Bottle", ("One size",), (900, 3900)),
    "Stoves": ("Camping Stove", ("One size",), (2900, 14900)),
    "Headlamps": ("Headlamp", ("One size",), (1900, 8900)),
}
COLORS = ("Black", "Blue", "Green", "Red", "Grey", "Orange", "Yellow")


def generate(rng: random.Random) -> dict[str, Any]:
    products = []
    for cat, (noun, sizes, (low, high)) in CATEGORIES.items():
        for adj in rng.sample(ADJECTIVES, 7):
            pid = len(products) + 1
            price = rng.randrange(low, high, 100) + rng.choice((0, 50, 90, 95))
            products.append(
                {
                    "id": pid,
                    "sku": f"TH{1000 + pid * 7}",
                    "name": f"{adj} {noun}",
                    "category": cat,
                    "color": rng.choice(COLORS),
                    "sizes": ",".join(sizes),
                    "price": price,
                    "stock": rng.choice((0, 0, 2, 3, 5, 8, 12, 20)),
                    "rating": round(rng.uniform(2.5, 5.0), 1),
                    "description": f"The {adj} {noun.lower()}: built for long days outside.",
                }
            )
    name = "Robin Keller"
    cities = rng.sample(CITIES, 3)
    addresses = [
        {
            "id": i + 1,
            "name": name,
            "street": f"{rng.randint(1, 99)} {rng.choice(STREETS)}",
            "city": city,
            "postcode": f"{rng.randint(1000, 9899)}",
            "country": "Netherlands" if i else "Austria",
            "is_default": int(i == 0),
        }
        for i, city in enumerate(cities)
    ]
    coupons = [
        {"code": "WELCOME10", "percent": 10, "min_total": 5000, "category": None, "expires": "2026-12-31"},
        {"code": "SPRING15", "percent": 15, "min_total": 0, "category": None, "expires": "2026-02-28"},
        {"code": "TENTS20", "percent": 20, "min_total": 0, "category": "Tents", "expires": "2026-06-30"},
    ]
    orders, items = [], []
    for n, status in enumerate(("delivered", "delivered", "shipped", "pending")):
        chosen = rng.sample([p for p in products if p["price"] < 15000], rng.randint(1, 3))
        subtotal = sum(p["price"] for p in chosen)
        a = addresses[0]
        orders.append(
            {
                "id": n + 1,
                "number": f"TH-{4101 + n * 17}",
                "status": status,
                "placed": f"2026-0{1 + n // 2}-{10 + n * 4}T10:00",
                "ship_name": a["name"],
                "ship_street": a["street"],
                "ship_city": a["city"],
                "ship_postcode": a["postcode"],
                "ship_country": a["country"],
                "shipping": "standard",
                "coupon": None,
                "subtotal": subtotal,
                "discount": 0,
                "shipping_cost": 0 if subtotal >= 10000 else 495,
                "total": subtotal + (0 if subtotal >= 10000 else 495),
            }
        )
        for p in chosen:
            items.append(
                {
                    "id": len(items) + 1,
                    "order_id": n + 1,
                    "product_id": p["id"],
                    "size": p["sizes"].split(",")[0],
                    "qty": 1,
                    "unit_price": p["price"],
                }
            )
    return {
        "meta": {"now": "2026-03-16T09:30", "user": name},
        "products": products,
        "addresses": addresses,
        "coupons": coupons,
        "cart_items": [],
        "orders": orders,
        "order_items": items,
        "_facts": {"buyer": person(rng)},
    }
