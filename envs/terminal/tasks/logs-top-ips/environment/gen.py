"""A seeded access log in the combined format (the same bytes on every build)."""

import random

rng = random.Random(404)
paths = [
    "/",
    "/index.html",
    "/login",
    "/api/v1/items",
    "/api/v1/items/17",
    "/static/app.js",
    "/favicon.ico",
    "/admin",
    "/wp-login.php",
    "/old-page",
    "/robots.txt",
    "/.env",
    "/api/v2/users",
]
agents = ["Mozilla/5.0 (X11; Linux x86_64)", "curl/8.4.0", "python-requests/2.31", "Googlebot/2.1"]
clients = [f"10.0.{rng.randrange(0, 4)}.{rng.randrange(1, 255)}" for _ in range(40)] + [
    f"192.168.1.{n}" for n in (7, 23, 42, 77, 101)
]
heavy = clients[:8]
for i in range(6000):
    ip = rng.choice(heavy) if rng.random() < 0.35 else rng.choice(clients)
    path = rng.choice(paths)
    status = rng.choices([200, 301, 304, 404, 500], weights=[60, 5, 10, 20, 5])[0]
    if path in ("/wp-login.php", "/.env", "/old-page"):
        status = 404 if rng.random() < 0.9 else 403
    minute, second = divmod(i // 3, 60)
    stamp = f"12/Mar/2026:{10 + minute // 60:02d}:{minute % 60:02d}:{second:02d} +0000"
    size = rng.randrange(120, 9000) if status == 200 else rng.randrange(0, 400)
    method = rng.choice(["GET", "GET", "GET", "POST"])
    print(f'{ip} - - [{stamp}] "{method} {path} HTTP/1.1" {status} {size} "-" "{rng.choice(agents)}"')
