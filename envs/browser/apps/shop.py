"""Trailhead: an outdoor-gear shop. Search with filters (category, colour, size, price, in stock),
sorting and pagination; product pages; a cart; a checkout with saved or new addresses (validated),
shipping methods and coupons (validated on the server); orders you can view and cancel."""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from openenv_mcp.worlds.browser.webapp import Page, WebApp, esc, page_links, query_string, table

PER_PAGE = 12
SHIPPING = {"standard": ("Standard (3-5 days)", 495), "express": ("Express (next day)", 1290)}
FREE_SHIPPING_FROM = 10000
POSTCODE = re.compile(r"^[0-9A-Z][0-9A-Z -]{2,8}[0-9A-Z]$")


def money(cents: int) -> str:
    return f"€{cents // 100}.{cents % 100:02d}"


class App(WebApp):
    NAME = "shop"
    TITLE = "Trailhead"
    NAV = (("Shop", "/"), ("Cart", "/cart"), ("Orders", "/account/orders"), ("Addresses", "/account/addresses"))
    SCHEMA = """
    CREATE TABLE products (
        id INTEGER PRIMARY KEY, sku TEXT UNIQUE NOT NULL, name TEXT NOT NULL, category TEXT NOT NULL,
        color TEXT NOT NULL, sizes TEXT NOT NULL, price INTEGER NOT NULL, stock INTEGER NOT NULL,
        rating REAL NOT NULL, description TEXT NOT NULL);
    CREATE TABLE addresses (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL, street TEXT NOT NULL, city TEXT NOT NULL,
        postcode TEXT NOT NULL, country TEXT NOT NULL, is_default INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE coupons (
        code TEXT PRIMARY KEY, percent INTEGER NOT NULL, min_total INTEGER NOT NULL DEFAULT 0,
        category TEXT, expires TEXT NOT NULL);
    CREATE TABLE cart_items (
        id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL REFERENCES products(id), size TEXT NOT NULL,
        qty INTEGER NOT NULL CHECK (qty > 0));
    CREATE TABLE orders (
        id INTEGER PRIMARY KEY, number TEXT UNIQUE NOT NULL, status TEXT NOT NULL, placed TEXT NOT NULL,
        ship_name TEXT NOT NULL, ship_street TEXT NOT NULL, ship_city TEXT NOT NULL, ship_postcode TEXT NOT NULL,
        ship_country TEXT NOT NULL, shipping TEXT NOT NULL, coupon TEXT, subtotal INTEGER NOT NULL,
        discount INTEGER NOT NULL, shipping_cost INTEGER NOT NULL, total INTEGER NOT NULL);
    CREATE TABLE order_items (
        id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL REFERENCES orders(id),
        product_id INTEGER NOT NULL REFERENCES products(id), size TEXT NOT NULL, qty INTEGER NOT NULL,
        unit_price INTEGER NOT NULL);
    """
    SCRIPT = """
document.querySelectorAll('select[data-autosubmit]').forEach(function (s) {
  s.addEventListener('change', function () { s.form.submit(); });
});
"""

    def routes(self) -> list[Route]:
        return [
            Route("/", self.catalog),
            Route("/products/{sku}", self.product),
            Route("/cart", self.cart),
            Route("/cart/add", self.cart_add, methods=["POST"]),
            Route("/cart/update", self.cart_update, methods=["POST"]),
            Route("/api/cart", self.api_cart),
            Route("/checkout", self.checkout, methods=["GET", "POST"]),
            Route("/account/orders", self.orders),
            Route("/account/orders/{number}", self.order, methods=["GET", "POST"]),
            Route("/account/addresses", self.addresses, methods=["GET", "POST"]),
        ]

    def header_extra(self, request: Request) -> str:
        row = self.row("SELECT COALESCE(SUM(qty), 0) AS n FROM cart_items")
        return f"<a id='cart-count' href='/cart'>Cart ({row['n'] if row else 0})</a>"

    # -- catalogue -----------------------------------------------------------------------------------
    async def catalog(self, request: Request) -> Response:
        q = request.query_params
        where, args = ["1 = 1"], []
        text = q.get("q", "").strip()
        if text:
            where.append("(lower(name) LIKE ? OR lower(description) LIKE ?)")
            args += [f"%{text.lower()}%"] * 2
        for key in ("category", "color"):
            if q.get(key):
                where.append(f"{key} = ?")
                args.append(q[key])
        if q.get("size"):
            where.append("(',' || sizes || ',') LIKE ?")
            args.append(f"%,{q['size']},%")
        if q.get("max_price", "").isdigit():
            where.append("price <= ?")
            args.append(int(q["max_price"]) * 100)
        if q.get("in_stock"):
            where.append("stock > 0")
        order = {"price": "price, name", "price_desc": "price DESC, name", "rating": "rating DESC, name"}.get(
            q.get("sort", ""), "name"
        )
        found = self.rows(f"SELECT * FROM products WHERE {' AND '.join(where)} ORDER BY {order}", *args)
        page = int(q["page"]) if q.get("page", "").isdigit() and int(q["page"]) > 0 else 1
        pages = max(1, -(-len(found) // PER_PAGE))
        rows = [
            (
                f"<a href='/products/{esc(p['sku'])}'>{esc(p['name'])}</a>",
                esc(p["category"]),
                esc(p["color"]),
                esc(money(p["price"])),
                f"{p['rating']:.1f}",
                "In stock" if p["stock"] > 0 else "Out of stock",
            )
            for p in found[(page - 1) * PER_PAGE : page * PER_PAGE]
        ]
        params = {k: q.get(k, "") for k in ("q", "category", "color", "size", "max_price", "in_stock", "sort")}
        body = self.filters(q) + f"<p>{len(found)} products</p>"
        body += table(("Product", "Category", "Colour", "Price", "Rating", "Availability"), rows, "Products")
        body += page_links("/", params, page, pages)
        return self.render(request, Page("Outdoor gear", body))

    def filters(self, q: object) -> str:
        get = q.get
        cats = [r[0] for r in self.rows("SELECT DISTINCT category FROM products ORDER BY category")]
        colors = [r[0] for r in self.rows("SELECT DISTINCT color FROM products ORDER BY color")]
        found = {s for r in self.rows("SELECT sizes FROM products") for s in r[0].split(",")}
        order = ("XS", "S", "M", "L", "XL")
        sizes = sorted(found, key=lambda s: (order.index(s) if s in order else 99, s))

        def options(values: object, chosen: str, empty: str) -> str:
            items = [f"<option value=''>{esc(empty)}</option>"]
            for v in values:  # type: ignore[attr-defined]
                sel = " selected" if v == chosen else ""
                items.append(f"<option value='{esc(v)}'{sel}>{esc(v)}</option>")
            return "".join(items)

        sort = get("sort", "")
        sorts = options(("price", "price_desc", "rating"), sort, "Name")
        sorts = sorts.replace(">price<", ">Price: low to high<").replace(">price_desc<", ">Price: high to low<")
        sorts = sorts.replace(">rating<", ">Best rated<")
        checked = " checked" if get("in_stock") else ""
        return (
            "<form action='/' role='search' class='card'>"
            f"<label for='q'>Search products</label><input id='q' name='q' value='{esc(get('q', ''))}'>"
            f"<label for='category'>Category</label><select id='category' name='category'>{options(cats, get('category', ''), 'All categories')}</select>"
            f"<label for='color'>Colour</label><select id='color' name='color'>{options(colors, get('color', ''), 'Any colour')}</select>"
            f"<label for='size'>Size</label><select id='size' name='size'>{options(sizes, get('size', ''), 'Any size')}</select>"
            f"<label for='max_price'>Maximum price (EUR)</label><input id='max_price' name='max_price' inputmode='numeric' value='{esc(get('max_price', ''))}'>"
            f"<label><input type='checkbox' name='in_stock' value='1'{checked}> In stock only</label>"
            f"<label for='sort'>Sort by</label><select id='sort' name='sort'>{sorts}</select>"
            "<div><button type='submit'>Apply filters</button></div></form>"
        )

    async def product(self, request: Request) -> Response:
        p = self.row("SELECT * FROM products WHERE sku = ?", request.path_params["sku"])
        if p is None:
            return self.not_found(request, "product")
        sizes = "".join(f"<option>{esc(s)}</option>" for s in p["sizes"].split(","))
        buy = (
            f"<form method='post' action='/cart/add' class='card'>{self.csrf_field(request)}"
            f"<input type='hidden' name='sku' value='{esc(p['sku'])}'>"
            f"<label for='size'>Size</label><select id='size' name='size'>{sizes}</select>"
            "<label for='qty'>Quantity</label><input id='qty' name='qty' type='number' min='1' max='9' value='1'>"
            "<div><button type='submit'>Add to cart</button></div></form>"
            if p["stock"] > 0
            else "<p><strong>Out of stock.</strong></p>"
        )
        body = (
            f"<p>{esc(p['description'])}</p><dl><dt>Price</dt><dd>{money(p['price'])}</dd><dt>Colour</dt><dd>{esc(p['color'])}</dd>"
            f"<dt>Category</dt><dd>{esc(p['category'])}</dd><dt>Rating</dt><dd>{p['rating']:.1f} of 5</dd>"
            f"<dt>Stock</dt><dd>{p['stock']} left</dd><dt>Article number</dt><dd>{esc(p['sku'])}</dd></dl>{buy}"
        )
        return self.render(request, Page(p["name"], body))

    # -- cart --------------------------------------------------------------------------------------
    def cart_lines(self) -> list[dict[str, object]]:
        rows = self.rows(
            "SELECT c.id, c.size, c.qty, p.name, p.sku, p.price, p.category, p.stock FROM cart_items c "
            "JOIN products p ON p.id = c.product_id ORDER BY c.id"
        )
        return [dict(r) for r in rows]

    async def api_cart(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        return JSONResponse({"items": sum(int(line["qty"]) for line in self.cart_lines())})  # type: ignore[arg-type]

    async def cart_add(self, request: Request) -> Response:
        form = await self.checked_form(request)
        if form is None:
            return self.forbidden(request)
        p = self.row("SELECT * FROM products WHERE sku = ?", form.get("sku", ""))
        qty = int(form["qty"]) if form.get("qty", "").isdigit() else 0
        if p is None or form.get("size") not in p["sizes"].split(",") or not 1 <= qty <= 9:
            return self.render(
                request,
                Page(
                    "Cart",
                    "<p><a href='/'>Back to the shop</a></p>",
                    status=400,
                    error="Choose a size and a quantity from 1 to 9.",
                ),
            )
        if p["stock"] < qty:
            return self.render(
                request,
                Page(
                    "Cart",
                    "<p><a href='/'>Back to the shop</a></p>",
                    status=400,
                    error=f"Only {p['stock']} left in stock.",
                ),
            )
        line = self.row("SELECT * FROM cart_items WHERE product_id = ? AND size = ?", p["id"], form["size"])
        if line is None:
            self.execute("INSERT INTO cart_items (product_id, size, qty) VALUES (?, ?, ?)", p["id"], form["size"], qty)
        else:
            self.execute("UPDATE cart_items SET qty = ? WHERE id = ?", min(9, line["qty"] + qty), line["id"])
        return self.redirect(request, "/cart?added=1")

    async def cart_update(self, request: Request) -> Response:
        form = await self.checked_form(request)
        if form is None:
            return self.forbidden(request)
        line_id = form.get("line", "")
        if form.get("action") == "remove":
            self.execute("DELETE FROM cart_items WHERE id = ?", line_id)
        elif form.get("qty", "").isdigit() and 1 <= int(form["qty"]) <= 9:
            self.execute("UPDATE cart_items SET qty = ? WHERE id = ?", int(form["qty"]), line_id)
        return self.redirect(request, "/cart")

    async def cart(self, request: Request) -> Response:
        lines = self.cart_lines()
        if not lines:
            return self.render(
                request, Page("Your cart", "<p>Your cart is empty. <a href='/'>Continue shopping</a></p>")
            )
        rows = []
        for line in lines:
            name = esc(line["name"])
            rows.append(
                (
                    f"{name} <span class='muted'>size {esc(line['size'])}</span>",
                    esc(money(int(line["price"]))),  # type: ignore[arg-type]
                    f"<form method='post' action='/cart/update' class='inline'>{self.csrf_field(request)}"
                    f"<input type='hidden' name='line' value='{line['id']}'>"
                    f"<label class='inline'>Quantity of {name} <input name='qty' type='number' min='1' max='9' value='{line['qty']}' size='2'></label>"
                    f"<button name='action' value='update'>Update {name}</button>"
                    f"<button name='action' value='remove'>Remove {name}</button></form>",
                )
            )
        subtotal = sum(int(line["price"]) * int(line["qty"]) for line in lines)  # type: ignore[arg-type]
        body = (
            table(("Item", "Price", "Quantity"), rows, "Cart") + f"<p>Subtotal: <strong>{money(subtotal)}</strong></p>"
        )
        body += "<p><a href='/checkout'>Proceed to checkout</a></p>"
        flash = "Added to your cart." if request.query_params.get("added") else ""
        return self.render(request, Page("Your cart", body, flash=flash))

    # -- checkout ----------------------------------------------------------------------------------
    def coupon_discount(self, code: str, lines: list[dict[str, object]], subtotal: int) -> tuple[int, str]:
        """``(discount in cents, error)`` of ``code`` on this cart (all checked here, never trusted)."""
        c = self.row("SELECT * FROM coupons WHERE upper(code) = upper(?)", code.strip())
        if c is None:
            return 0, "This coupon code does not exist."
        if str(self.meta.get("now", ""))[:10] > c["expires"]:
            return 0, "This coupon has expired."
        base = (
            subtotal
            if c["category"] is None
            else sum(
                int(line["price"]) * int(line["qty"])
                for line in lines
                if line["category"] == c["category"]  # type: ignore[arg-type]
            )
        )
        if c["category"] is not None and base == 0:
            return 0, f"This coupon applies to {c['category']} only."
        if subtotal < c["min_total"]:
            return 0, f"This coupon needs an order of at least {money(c['min_total'])}."
        return base * c["percent"] // 100, ""

    def address_form(self, values: dict[str, str]) -> str:
        fields = (
            ("name", "Full name"),
            ("street", "Street and number"),
            ("city", "City"),
            ("postcode", "Postcode"),
            ("country", "Country"),
        )
        return "".join(
            f"<label for='new_{k}'>{esc(label)}</label><input id='new_{k}' name='new_{k}' value='{esc(values.get('new_' + k, ''))}'>"
            for k, label in fields
        )

    def new_address_error(self, form: dict[str, str]) -> str:
        for key, label in (("name", "full name"), ("street", "street"), ("city", "city"), ("country", "country")):
            if not form.get(f"new_{key}", "").strip():
                return f"Enter the {label} of the new address."
        if not POSTCODE.match(form.get("new_postcode", "").strip().upper()):
            return "Enter a valid postcode (4 to 10 letters, digits, spaces or dashes)."
        return ""

    async def checkout(self, request: Request) -> Response:
        lines = self.cart_lines()
        if not lines:
            return self.render(
                request, Page("Checkout", "<p>Your cart is empty. <a href='/'>Continue shopping</a></p>")
            )
        subtotal = sum(int(line["price"]) * int(line["qty"]) for line in lines)  # type: ignore[arg-type]
        form: dict[str, str] = {}
        error = ""
        if request.method == "POST":
            checked = await self.checked_form(request)
            if checked is None:
                return self.forbidden(request)
            form = checked
            error, number = self.place_order(form, lines, subtotal)
            if not error:
                return self.redirect(request, f"/account/orders/{number}?placed=1")
        return self.render(
            request,
            Page(
                "Checkout",
                self.checkout_form(request, form, lines, subtotal),
                error=error,
                status=400 if error else 200,
            ),
        )

    def checkout_form(
        self, request: Request, form: dict[str, str], lines: list[dict[str, object]], subtotal: int
    ) -> str:
        addresses = self.rows("SELECT * FROM addresses ORDER BY is_default DESC, id")
        chosen = form.get("address", str(addresses[0]["id"]) if addresses else "new")
        radios = "".join(
            f"<label><input type='radio' name='address' value='{a['id']}'{' checked' if str(a['id']) == chosen else ''}> "
            f"{esc(a['name'])}, {esc(a['street'])}, {esc(a['postcode'])} {esc(a['city'])}, {esc(a['country'])}"
            f"{' (default)' if a['is_default'] else ''}</label>"
            for a in addresses
        )
        radios += f"<label><input type='radio' name='address' value='new'{' checked' if chosen == 'new' else ''}> A new address</label>"
        ship = form.get("shipping", "standard")
        methods = "".join(
            f"<label><input type='radio' name='shipping' value='{k}'{' checked' if k == ship else ''}> {esc(label)}: {money(cost)}</label>"
            for k, (label, cost) in SHIPPING.items()
        )
        items = "".join(f"<li>{line['qty']} × {esc(line['name'])} (size {esc(line['size'])})</li>" for line in lines)
        return (
            f"<ul>{items}</ul><p>Subtotal: {money(subtotal)} (shipping is free from {money(FREE_SHIPPING_FROM)})</p>"
            f"<form method='post'>{self.csrf_field(request)}"
            f"<fieldset><legend>Shipping address</legend>{radios}{self.address_form(form)}</fieldset>"
            f"<fieldset><legend>Shipping method</legend>{methods}</fieldset>"
            f"<label for='coupon'>Coupon code</label><input id='coupon' name='coupon' value='{esc(form.get('coupon', ''))}'>"
            "<div><button type='submit'>Place order</button></div></form>"
        )

    def place_order(self, form: dict[str, str], lines: list[dict[str, object]], subtotal: int) -> tuple[str, str]:
        """``(error, order number)``: everything is computed here from the server's own rows."""
        if form.get("address") == "new":
            error = self.new_address_error(form)
            if error:
                return error, ""
            addr = {k: form[f"new_{k}"].strip() for k in ("name", "street", "city", "country")}
            addr["postcode"] = form["new_postcode"].strip().upper()
        else:
            row = self.row("SELECT * FROM addresses WHERE id = ?", form.get("address", ""))
            if row is None:
                return "Choose a shipping address.", ""
            addr = {k: row[k] for k in ("name", "street", "city", "postcode", "country")}
        if form.get("shipping") not in SHIPPING:
            return "Choose a shipping method.", ""
        for line in lines:
            if int(line["stock"]) < int(line["qty"]):  # type: ignore[arg-type]
                return f"Only {line['stock']} of {line['name']} left in stock.", ""
        discount, code = 0, form.get("coupon", "").strip().upper() or None
        if code:
            discount, error = self.coupon_discount(code, lines, subtotal)
            if error:
                return error, ""
        shipping_cost = 0 if subtotal - discount >= FREE_SHIPPING_FROM else SHIPPING[form["shipping"]][1]
        count = self.row("SELECT COUNT(*) AS n FROM orders")
        number = f"TH-{5001 + (count['n'] if count else 0)}"
        with self.transaction():
            order_id = self.execute(
                "INSERT INTO orders (number, status, placed, ship_name, ship_street, ship_city, ship_postcode, ship_country, "
                "shipping, coupon, subtotal, discount, shipping_cost, total) VALUES (?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                number,
                str(self.meta.get("now", "")),
                addr["name"],
                addr["street"],
                addr["city"],
                addr["postcode"],
                addr["country"],
                form["shipping"],
                code,
                subtotal,
                discount,
                shipping_cost,
                subtotal - discount + shipping_cost,
            )
            for line in lines:
                product = self.row("SELECT id FROM products WHERE sku = ?", line["sku"])
                assert product is not None
                self.execute(
                    "INSERT INTO order_items (order_id, product_id, size, qty, unit_price) VALUES (?, ?, ?, ?, ?)",
                    order_id,
                    product["id"],
                    line["size"],
                    line["qty"],
                    line["price"],
                )
                self.execute("UPDATE products SET stock = stock - ? WHERE id = ?", line["qty"], product["id"])
            self.execute("DELETE FROM cart_items")
        return "", number

    # -- account -----------------------------------------------------------------------------------
    async def orders(self, request: Request) -> Response:
        orders = self.rows("SELECT * FROM orders ORDER BY placed DESC, id DESC")
        rows = [
            (
                f"<a href='/account/orders/{esc(o['number'])}'>{esc(o['number'])}</a>",
                esc(o["placed"][:10]),
                esc(o["status"].title()),
                money(o["total"]),
            )
            for o in orders
        ]
        return self.render(
            request,
            Page(
                "Your orders",
                table(("Order", "Placed", "Status", "Total"), rows, "Orders") if rows else "<p>No orders yet.</p>",
            ),
        )

    async def order(self, request: Request) -> Response:
        o = self.row("SELECT * FROM orders WHERE number = ?", request.path_params["number"])
        if o is None:
            return self.not_found(request, "order")
        flash = "Thank you! Your order is placed." if request.query_params.get("placed") else ""
        if request.method == "POST":
            form = await self.checked_form(request)
            if form is None:
                return self.forbidden(request)
            if form.get("action") == "cancel" and o["status"] == "pending":
                with self.transaction():
                    self.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", o["id"])
                    for item in self.rows("SELECT * FROM order_items WHERE order_id = ?", o["id"]):
                        self.execute(
                            "UPDATE products SET stock = stock + ? WHERE id = ?", item["qty"], item["product_id"]
                        )
                return self.redirect(request, f"/account/orders/{o['number']}{query_string({'cancelled': 1})}")
        if request.query_params.get("cancelled"):
            flash = "Your order is cancelled."
        items = self.rows(
            "SELECT i.*, p.name FROM order_items i JOIN products p ON p.id = i.product_id WHERE order_id = ? ORDER BY i.id",
            o["id"],
        )
        rows = [(esc(i["name"]), esc(i["size"]), str(i["qty"]), money(i["unit_price"])) for i in items]
        body = (
            f"<p>Status: <strong>{esc(o['status'].title())}</strong> · placed {esc(o['placed'][:10])}</p>"
            + table(("Item", "Size", "Quantity", "Unit price"), rows, "Items")
            + f"<p>Ship to {esc(o['ship_name'])}, {esc(o['ship_street'])}, {esc(o['ship_postcode'])} {esc(o['ship_city'])}, {esc(o['ship_country'])} ({esc(o['shipping'])})</p>"
            + f"<p>Subtotal {money(o['subtotal'])} · discount {money(o['discount'])} · shipping {money(o['shipping_cost'])} · <strong>total {money(o['total'])}</strong></p>"
        )
        if o["status"] == "pending":
            body += f"<form method='post'>{self.csrf_field(request)}<button name='action' value='cancel'>Cancel this order</button></form>"
        return self.render(request, Page(f"Order {o['number']}", body, flash=flash))

    async def addresses(self, request: Request) -> Response:
        error = ""
        form: dict[str, str] = {}
        if request.method == "POST":
            checked = await self.checked_form(request)
            if checked is None:
                return self.forbidden(request)
            form = checked
            if form.get("action") == "default" and self.row("SELECT 1 FROM addresses WHERE id = ?", form.get("id", "")):
                with self.transaction():
                    self.execute("UPDATE addresses SET is_default = (id = ?)", int(form["id"]))
                return self.redirect(request, "/account/addresses")
            if form.get("action") == "add":
                error = self.new_address_error(form)
                if not error:
                    self.execute(
                        "INSERT INTO addresses (name, street, city, postcode, country, is_default) VALUES (?, ?, ?, ?, ?, 0)",
                        *(form[f"new_{k}"].strip() for k in ("name", "street", "city")),
                        form["new_postcode"].strip().upper(),
                        form["new_country"].strip(),
                    )
                    return self.redirect(request, "/account/addresses")
        items = []
        for a in self.rows("SELECT * FROM addresses ORDER BY id"):
            label = f"{a['name']}, {a['street']}, {a['postcode']} {a['city']}, {a['country']}"
            action = (
                "<strong>Default address</strong>"
                if a["is_default"]
                else f"<form method='post' class='inline'>{self.csrf_field(request)}<input type='hidden' name='id' value='{a['id']}'>"
                f"<button name='action' value='default'>Make {esc(a['city'])} the default</button></form>"
            )
            items.append(f"<li>{esc(label)} {action}</li>")
        body = f"<ul>{''.join(items)}</ul><h2>Add an address</h2><form method='post'>{self.csrf_field(request)}{self.address_form(form)}"
        body += "<div><button name='action' value='add'>Save address</button></div></form>"
        return self.render(request, Page("Your addresses", body, error=error, status=400 if error else 200))
