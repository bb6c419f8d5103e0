"""Shop (Trailhead) tasks: find, filter, buy, check out with addresses and coupons, manage orders."""

from __future__ import annotations

from typing import Any

from browser_tasks.base import BrowserTask, Episode, Facts
from browser_tasks.checks import changed_rows, one_new_order, order_lines, same_answer
from openenv_mcp.worlds.browser.driving import click, look, navigate, select, submit, type_into

SHOP = "http://shop.localhost:8000"
ORDERED = {"shop.orders": "insert", "shop.order_items": "insert", "shop.products": "update", "shop.cart_items": "any"}


def in_stock(data: dict, category: str, size: str | None = None) -> list[dict]:
    return [
        p
        for p in data["shop"]["products"]
        if p["category"] == category and p["stock"] > 0 and (size is None or size in p["sizes"].split(","))
    ]


def make_unique_min(products: list[dict], key: str = "price") -> dict:
    """The product with the smallest ``key``, made strictly smallest (ties nudged up)."""
    best = min(products, key=lambda p: (p[key], p["id"]))
    for p in products:
        if p is not best and p[key] == best[key]:
            p[key] += 100
    return best


def default_address(data: dict) -> dict:
    return next(a for a in data["shop"]["addresses"] if a["is_default"])


# -- reference steps ------------------------------------------------------------------------------
def add_to_cart(product: dict, size: str, qty: int = 1) -> Any:
    """Search the shop for the product by name, open it, choose size and quantity, add it to the cart."""
    yield from navigate(SHOP + "/")
    page = yield from look()
    yield from type_into(page.ref_of("textbox", "Search products"), product["name"], submit=True)
    page = yield from look()
    yield from click(page.ref_of("link", product["name"]), product["name"])
    page = yield from look()
    if len(product["sizes"].split(",")) > 1:
        yield from select(page.ref_of("combobox", "Size"), [size], "Size")
    if qty != 1:
        yield from type_into(page.ref_of("spinbutton", "Quantity"), str(qty), element="Quantity")
    yield from click(page.ref_of("button", "Add to cart"), "Add to cart")


def check_out(
    *, address: str | None = None, new_address: dict | None = None, shipping: str = "Standard", coupon: str = ""
) -> Any:
    """From the cart: checkout, the address whose label contains ``address`` (or a new one), the
    shipping method, the coupon, Place order."""
    yield from navigate(SHOP + "/cart")
    page = yield from look()
    yield from click(page.ref_of("link", "Proceed to checkout"), "Proceed to checkout")
    page = yield from look()
    if new_address is not None:
        yield from click(page.ref_of("radio", "A new address"), "A new address")
        labels = {
            "name": "Full name",
            "street": "Street and number",
            "city": "City",
            "postcode": "Postcode",
            "country": "Country",
        }
        from openenv_mcp.worlds.browser.driving import fill_form

        yield from fill_form(
            [(page.ref_of("textbox", labels[k]), labels[k], "textbox", v) for k, v in new_address.items()]
        )
    elif address is not None:
        yield from click(page.find("radio", contains=address).ref or "", address)
    yield from click(page.find("radio", contains=shipping).ref or "", shipping)
    if coupon:
        yield from type_into(page.ref_of("textbox", "Coupon code"), coupon, element="Coupon code")
    yield from click(page.ref_of("button", "Place order"), "Place order")


def order_matches(
    ep: Episode, state: dict, lines: list[tuple[int, str, int]], *, city: str, shipping: str, coupon: str | None = None
) -> tuple[bool, dict]:
    order, info = one_new_order(ep, state)
    if order is None:
        return False, info
    got = order_lines(state, order["id"])
    info.update(
        lines_ok=got == sorted(lines),
        city_ok=order["ship_city"] == city,
        shipping_ok=order["shipping"] == shipping,
        coupon_ok=(order["coupon"] or None) == coupon,
        status=order["status"],
    )
    return all(info[k] for k in ("lines_ok", "city_ok", "shipping_ok", "coupon_ok")) and order[
        "status"
    ] == "pending", info


# -- tasks ----------------------------------------------------------------------------------------
class CheapestJacket(BrowserTask):
    id = "shop-cheapest-jacket"
    app = "shop"
    prompt = (
        "In the Trailhead shop, buy the cheapest rain jacket that is in stock in size M (one jacket, size M), "
        "with standard shipping to your default address."
    )
    changes = ORDERED

    def scenario(self, data: dict, rng: Any) -> Facts:
        jacket = make_unique_min(in_stock(data, "Rain jackets", "M"))
        return {"product": jacket["id"], "name": jacket["name"], "city": default_address(data)["city"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        return order_matches(ep, state, [(ep.facts["product"], "M", 1)], city=ep.facts["city"], shipping="standard")

    def reference(self, ep: Episode) -> Any:
        yield from navigate(SHOP + "/?category=Rain+jackets&size=M&in_stock=1&sort=price")
        page = yield from look()
        cheapest = page.find("table").find_all("row")[1].find("link")
        product = next(p for p in ep.data["shop"]["products"] if p["name"] == cheapest.name)
        yield from add_to_cart(product, "M")
        yield from check_out(address="(default)")

    def wrong(self, ep: Episode) -> Any:  # the cheapest jacket, ignoring stock and size
        product = min(
            (
                p
                for p in ep.data["shop"]["products"]
                if p["category"] == "Rain jackets" and p["id"] != ep.facts["product"] and p["stock"] > 0
            ),
            key=lambda p: p["price"],
        )
        yield from add_to_cart(product, product["sizes"].split(",")[0])
        yield from check_out(address="(default)")


class TentCoupon(BrowserTask):
    id = "shop-tent-coupon"
    app = "shop"
    prompt = (
        "Buy the best-rated tent that is in stock at Trailhead, using the shop's current coupon for tents, "
        "with express shipping to your default address."
    )
    changes = ORDERED

    def scenario(self, data: dict, rng: Any) -> Facts:
        tents = in_stock(data, "Tents")
        best = max(tents, key=lambda p: (p["rating"], -p["id"]))
        for p in tents:
            if p is not best and p["rating"] >= best["rating"]:
                p["rating"] = round(best["rating"] - 0.1, 1)
        return {"product": best["id"], "city": default_address(data)["city"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        return order_matches(
            ep,
            state,
            [(ep.facts["product"], "One size", 1)],
            city=ep.facts["city"],
            shipping="express",
            coupon="TENTS20",
        )

    def reference(self, ep: Episode) -> Any:
        yield from navigate(SHOP + "/?category=Tents&in_stock=1&sort=rating")
        page = yield from look()
        name = page.find("table").find_all("row")[1].find("link").name
        product = next(p for p in ep.data["shop"]["products"] if p["name"] == name)
        yield from add_to_cart(product, "One size")
        yield from check_out(address="(default)", shipping="Express", coupon="TENTS20")

    def wrong(self, ep: Episode) -> Any:  # the expired spring coupon instead
        product = next(p for p in ep.data["shop"]["products"] if p["id"] == ep.facts["product"])
        yield from add_to_cart(product, "One size")
        yield from check_out(address="(default)", shipping="Express", coupon="SPRING15")


class NewAddress(BrowserTask):
    id = "shop-new-address"
    app = "shop"
    prompt = (
        "Send a gift from Trailhead: buy the cheapest water bottle in stock and ship it with standard shipping to "
        "a new address: Mira Jensen, 4 Quay Street, 3011 AB, Rotterdam, Netherlands."
    )
    changes = ORDERED
    ADDRESS = {
        "name": "Mira Jensen",
        "street": "4 Quay Street",
        "city": "Rotterdam",
        "postcode": "3011 AB",
        "country": "Netherlands",
    }

    def scenario(self, data: dict, rng: Any) -> Facts:
        return {"product": make_unique_min(in_stock(data, "Water bottles"))["id"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        ok, info = order_matches(
            ep, state, [(ep.facts["product"], "One size", 1)], city="Rotterdam", shipping="standard"
        )
        order, _ = one_new_order(ep, state)
        same = order is not None and (order["ship_name"], order["ship_street"], order["ship_postcode"]) == (
            "Mira Jensen",
            "4 Quay Street",
            "3011 AB",
        )
        return ok and same, info | {"address_ok": same}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(SHOP + "/?category=Water+bottles&in_stock=1&sort=price")
        page = yield from look()
        name = page.find("table").find_all("row")[1].find("link").name
        product = next(p for p in ep.data["shop"]["products"] if p["name"] == name)
        yield from add_to_cart(product, "One size")
        yield from check_out(new_address=self.ADDRESS)

    def wrong(self, ep: Episode) -> Any:  # shipped to the default address instead
        product = next(p for p in ep.data["shop"]["products"] if p["id"] == ep.facts["product"])
        yield from add_to_cart(product, "One size")
        yield from check_out(address="(default)")


class CancelPending(BrowserTask):
    id = "shop-cancel-pending"
    app = "shop"
    prompt = "In your Trailhead account, cancel the order that has not been shipped yet (it is still pending). Change nothing else."
    changes = {"shop.orders": "update", "shop.products": "update"}

    def scenario(self, data: dict, rng: Any) -> Facts:
        return {"order": next(o for o in data["shop"]["orders"] if o["status"] == "pending")["number"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        changed = changed_rows(ep, state, "shop", "orders")
        ok = (
            len(changed) == 1
            and changed[0][0]["number"] == ep.facts["order"]
            and changed[0][1]["status"] == "cancelled"
        )
        return ok, {"orders_changed": len(changed)}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(SHOP + "/account/orders")
        page = yield from look()
        row = page.find("row", contains="Pending")
        yield from click(row.find("link").ref or "", "pending order")
        page = yield from look()
        yield from click(page.ref_of("button", "Cancel this order"), "Cancel this order")

    def wrong(self, ep: Episode) -> Any:  # opens it, does not cancel
        yield from navigate(SHOP + "/account/orders")
        page = yield from look()
        yield from click(page.find("row", contains="Pending").find("link").ref or "", "pending order")
        yield from look()


class DefaultAddress(BrowserTask):
    id = "shop-default-address"
    app = "shop"
    prompt = "Of your saved Trailhead addresses in the Netherlands, make the one with the lower postcode your default address."
    changes = {"shop.addresses": "update"}

    def scenario(self, data: dict, rng: Any) -> Facts:
        nl = sorted(
            (a for a in data["shop"]["addresses"] if a["country"] == "Netherlands"), key=lambda a: a["postcode"]
        )
        if nl[0]["postcode"] == nl[1]["postcode"]:
            nl[1]["postcode"] = str(int(nl[1]["postcode"]) + 1)
        return {"address": nl[0]["id"], "city": nl[0]["city"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        defaults = [a["id"] for a in state["shop"]["addresses"] if a["is_default"]]
        fields = [{k: v for k, v in a.items() if k != "is_default"} for a in state["shop"]["addresses"]]
        before = [{k: v for k, v in a.items() if k != "is_default"} for a in ep.initial["shop"]["addresses"]]
        return defaults == [ep.facts["address"]] and fields == before, {"defaults": defaults}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(SHOP + "/account/addresses")
        page = yield from look()
        yield from click(page.ref_of("button", f"Make {ep.facts['city']} the default"), "Make default")

    def wrong(self, ep: Episode) -> Any:  # the other Dutch address
        other = next(
            a for a in ep.data["shop"]["addresses"] if a["country"] == "Netherlands" and a["id"] != ep.facts["address"]
        )
        yield from navigate(SHOP + "/account/addresses")
        page = yield from look()
        yield from click(page.ref_of("button", f"Make {other['city']} the default"), "Make default")


class CartCleanup(BrowserTask):
    id = "shop-cart-cleanup"
    app = "shop"
    prompt = (
        "Your Trailhead cart holds things you no longer want. Leave only the water bottle in it, with quantity 3. "
        "Do not place an order."
    )
    changes = {"shop.cart_items": "any"}

    def scenario(self, data: dict, rng: Any) -> Facts:
        shop = data["shop"]
        picks = [rng.choice(in_stock(data, c)) for c in ("Water bottles", "Headlamps", "Stoves", "Hats")]
        for p in picks:
            p["stock"] = max(p["stock"], 5)
        shop["cart_items"] = [
            {"id": i + 1, "product_id": p["id"], "size": "One size", "qty": 1 + (i % 2)} for i, p in enumerate(picks)
        ]
        return {"bottle": picks[0]["id"], "others": [p["name"] for p in picks[1:]], "name": picks[0]["name"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        cart = [(c["product_id"], c["qty"]) for c in state["shop"]["cart_items"]]
        return cart == [(ep.facts["bottle"], 3)], {"cart": cart}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(SHOP + "/cart")
        for name in ep.facts["others"]:
            page = yield from look()
            yield from click(page.ref_of("button", f"Remove {name}"), f"Remove {name}")
        page = yield from look()
        yield from type_into(page.ref_of("spinbutton", f"Quantity of {ep.facts['name']}"), "3", element="Quantity")
        yield from click(page.ref_of("button", f"Update {ep.facts['name']}"), "Update")

    def wrong(self, ep: Episode) -> Any:  # removes the others, forgets the quantity
        yield from navigate(SHOP + "/cart")
        for name in ep.facts["others"]:
            page = yield from look()
            yield from click(page.ref_of("button", f"Remove {name}"), f"Remove {name}")


class PriciestBackpack(BrowserTask):
    id = "shop-priciest-backpack"
    app = "shop"
    prompt = (
        "What does the most expensive backpack with a rating of 4.0 or better cost at Trailhead (in stock or not)? "
        "Submit the price in euros, like 123.45."
    )
    answer = True

    def scenario(self, data: dict, rng: Any) -> Facts:
        packs = [p for p in data["shop"]["products"] if p["category"] == "Backpacks"]
        rng.choice(packs)["rating"] = 4.6  # at least one qualifies
        good = [p for p in packs if p["rating"] >= 4.0]
        top = max(good, key=lambda p: p["price"])
        for p in packs:  # a pricier, lower-rated one makes the rating filter matter
            if p["rating"] < 4.0:
                p["price"] = max(p["price"], top["price"] + 1000)
                break
        return {"expected": f"{top['price'] / 100:.2f}"}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        return same_answer((answer or "").replace("€", "").replace("EUR", ""), ep.facts["expected"]), {}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(SHOP + "/?category=Backpacks&sort=price_desc")
        page = yield from look()
        for row in page.find("table").find_all("row")[1:]:
            cells = [c.name for c in row.find_all("cell")]
            if float(cells[4]) >= 4.0:
                yield from submit(cells[3].lstrip("€"))
                return

    def wrong(self, ep: Episode) -> Any:  # the most expensive, rating ignored
        yield from navigate(SHOP + "/?category=Backpacks&sort=price_desc")
        page = yield from look()
        yield from submit(page.find("table").find_all("row")[1].find_all("cell")[3].name.lstrip("€"))


class OutOfStockBoots(BrowserTask):
    id = "shop-out-of-stock-boots"
    app = "shop"
    prompt = "How many different hiking boots does Trailhead list as out of stock? Submit the number."
    answer = True

    def scenario(self, data: dict, rng: Any) -> Facts:
        boots = [p for p in data["shop"]["products"] if p["category"] == "Hiking boots"]
        for p in rng.sample(boots, 2):
            p["stock"] = 0
        return {"expected": str(sum(1 for p in boots if p["stock"] == 0))}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        return same_answer(answer, ep.facts["expected"]), {}

    def reference(self, ep: Episode) -> Any:
        yield from navigate(SHOP + "/")
        page = yield from look()
        yield from select(page.ref_of("combobox", "Category"), ["Hiking boots"], "Category")
        yield from click(page.ref_of("button", "Apply filters"), "Apply filters")
        page = yield from look()
        rows = page.find("table").find_all("row")[1:]
        yield from submit(str(sum(1 for r in rows if "Out of stock" in r.all_text)))

    def wrong(self, ep: Episode) -> Any:
        yield from navigate(SHOP + "/?category=Hiking+boots")
        page = yield from look()
        yield from submit(str(len(page.find("table").find_all("row")) - 1))


class TwoItemsExpress(BrowserTask):
    id = "shop-two-items-express"
    app = "shop"
    prompt = (
        "In one Trailhead order with express shipping to your default address, buy the cheapest black Merino T-shirt "
        "in stock in size L, and two of the cheapest headlamp in stock."
    )
    changes = ORDERED

    def scenario(self, data: dict, rng: Any) -> Facts:
        shirts = [p for p in data["shop"]["products"] if p["category"] == "T-shirts"]
        for p in rng.sample(shirts, 2):
            p["color"], p["stock"] = "Black", max(p["stock"], 3)
        shirt = make_unique_min([p for p in shirts if p["color"] == "Black" and p["stock"] > 0])
        lamps = in_stock(data, "Headlamps")
        for p in lamps:
            p["stock"] = max(p["stock"], 2)
        lamp = make_unique_min(lamps)
        return {"shirt": shirt["id"], "lamp": lamp["id"], "city": default_address(data)["city"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        lines = [(ep.facts["shirt"], "L", 1), (ep.facts["lamp"], "One size", 2)]
        return order_matches(ep, state, lines, city=ep.facts["city"], shipping="express")

    def reference(self, ep: Episode) -> Any:
        products = {p["id"]: p for p in ep.data["shop"]["products"]}
        yield from navigate(SHOP + "/?category=T-shirts&color=Black&size=L&in_stock=1&sort=price")
        page = yield from look()
        shirt = page.find("table").find_all("row")[1].find("link").name
        yield from add_to_cart(next(p for p in products.values() if p["name"] == shirt), "L")
        yield from navigate(SHOP + "/?category=Headlamps&in_stock=1&sort=price")
        page = yield from look()
        lamp = page.find("table").find_all("row")[1].find("link").name
        yield from add_to_cart(next(p for p in products.values() if p["name"] == lamp), "One size", 2)
        yield from check_out(address="(default)", shipping="Express")

    def wrong(self, ep: Episode) -> Any:  # one headlamp only
        products = {p["id"]: p for p in ep.data["shop"]["products"]}
        yield from add_to_cart(products[ep.facts["shirt"]], "L")
        yield from add_to_cart(products[ep.facts["lamp"]], "One size", 1)
        yield from check_out(address="(default)", shipping="Express")


class Reorder(BrowserTask):
    id = "shop-reorder"
    app = "shop"
    prompt = (
        "Order again, in one new order, everything that was in your most recent delivered Trailhead order (same "
        "products, sizes and quantities), with standard shipping to your default address."
    )
    changes = ORDERED

    def scenario(self, data: dict, rng: Any) -> Facts:
        shop = data["shop"]
        delivered = [o for o in shop["orders"] if o["status"] == "delivered"]
        last = max(delivered, key=lambda o: o["placed"])
        lines = [(i["product_id"], i["size"], i["qty"]) for i in shop["order_items"] if i["order_id"] == last["id"]]
        for p in shop["products"]:
            if any(p["id"] == pid for pid, _, _ in lines):
                p["stock"] = max(p["stock"], 3)
        return {"lines": sorted(lines), "number": last["number"], "city": default_address(data)["city"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        return order_matches(
            ep, state, [tuple(x) for x in ep.facts["lines"]], city=ep.facts["city"], shipping="standard"
        )  # type: ignore[misc]

    def reference(self, ep: Episode) -> Any:
        products = {p["id"]: p for p in ep.data["shop"]["products"]}
        yield from navigate(SHOP + "/account/orders")
        page = yield from look()
        delivered = [r for r in page.find("table").find_all("row")[1:] if "Delivered" in r.all_text]
        yield from click(delivered[0].find("link").ref or "", "last delivered order")  # newest first
        page = yield from look()
        for row in page.find("table", None).find_all("row")[1:]:
            name, size, qty = (c.name for c in row.find_all("cell")[:3])
            yield from add_to_cart(next(p for p in products.values() if p["name"] == name), size, int(qty))
        yield from check_out(address="(default)")

    def wrong(self, ep: Episode) -> Any:  # the oldest delivered order instead
        shop = ep.data["shop"]
        products = {p["id"]: p for p in shop["products"]}
        first = min((o for o in shop["orders"] if o["status"] == "delivered"), key=lambda o: o["placed"])
        for i in shop["order_items"]:
            if i["order_id"] == first["id"]:
                products[i["product_id"]]["stock"] = 9
                yield from add_to_cart(products[i["product_id"]], i["size"], i["qty"])
        yield from check_out(address="(default)")


class NewsletterCoupon(BrowserTask):
    id = "shop-newsletter-coupon"
    app = "mail"
    prompt = (
        "The latest Deals Weekly newsletter in your mailbox has a Trailhead coupon code. Use it to buy the cheapest "
        "sleeping bag that is in stock at Trailhead, with standard shipping to your default address."
    )
    changes = ORDERED

    def scenario(self, data: dict, rng: Any) -> Facts:
        code = f"CAMP{rng.randint(10, 99)}"
        data["shop"]["coupons"].append(
            {"code": code, "percent": 12, "min_total": 0, "category": None, "expires": "2026-04-30"}
        )
        mail = data["mail"]
        mail["messages"].append(
            {
                "id": len(mail["messages"]) + 1,
                "folder": "inbox",
                "sender": "news@dealsweekly.example",
                "recipients": "robin.keller@northwind.example",
                "subject": "Deals Weekly #215: Trailhead camping week",
                "body": f"Camping week at Trailhead!\nUse the code {code} for 12% off everything until April 30.",
                "sent_at": "2026-03-15T07:00",
                "unread": 1,
                "in_reply_to": None,
                "forwarded_from": None,
            }
        )
        bag = make_unique_min(in_stock(data, "Sleeping bags"))
        return {"code": code, "product": bag["id"], "city": default_address(data)["city"]}

    def check(self, ep: Episode, state: dict, answer: str | None) -> tuple[bool, dict]:
        return order_matches(
            ep,
            state,
            [(ep.facts["product"], "One size", 1)],
            city=ep.facts["city"],
            shipping="standard",
            coupon=ep.facts["code"],
        )

    def reference(self, ep: Episode) -> Any:
        yield from navigate("http://mail.localhost:8000/?q=deals+weekly")
        page = yield from look()
        newest = page.find("table").find_all("row")[1].find("link")
        yield from click(newest.ref or "", newest.all_text)
        page = yield from look()
        code = page.find("article").all_text.split("Use the code ")[1].split()[0]
        yield from navigate(SHOP + "/?category=Sleeping+bags&in_stock=1&sort=price")
        page = yield from look()
        name = page.find("table").find_all("row")[1].find("link").name
        product = next(p for p in ep.data["shop"]["products"] if p["name"] == name)
        yield from add_to_cart(product, "One size")
        yield from check_out(address="(default)", coupon=code)

    def wrong(self, ep: Episode) -> Any:  # an old coupon
        product = next(p for p in ep.data["shop"]["products"] if p["id"] == ep.facts["product"])
        yield from add_to_cart(product, "One size")
        yield from check_out(address="(default)", coupon="WELCOME10")


TASKS = [
    CheapestJacket(),
    TentCoupon(),
    NewAddress(),
    CancelPending(),
    DefaultAddress(),
    CartCleanup(),
    PriciestBackpack(),
    OutOfStockBoots(),
    TwoItemsExpress(),
    Reorder(),
    NewsletterCoupon(),
]
