"""A tiny key-value store over HTTP (standard library only).

    python3 server.py --config /etc/kv/kv.conf

GET /health -> ok; PUT /kv/NAME stores the body; GET /kv/NAME returns it (404 when unknown).
Values live in one JSON file in [storage] data_dir.
"""

import argparse
import configparser
import json
import os
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NAME = re.compile(r"^/kv/([A-Za-z0-9_.-]{1,64})$")


def load(path):
    config = configparser.ConfigParser()
    if not config.read(path):
        sys.exit(f"kv: cannot read {path}")
    server = config["server"]
    return server.get("bind"), server.getint("port"), config["storage"].get("data_dir")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="/etc/kv/kv.conf")
    bind, port, data_dir = load(parser.parse_args().config)
    store = os.path.join(data_dir, "store.json")
    if not os.path.isdir(data_dir):
        sys.exit(f"kv: data_dir {data_dir} does not exist")

    def read_store():
        try:
            with open(store) as handle:
                return json.load(handle)
        except FileNotFoundError:
            return {}

    class Handler(BaseHTTPRequestHandler):
        def reply(self, code, body):
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                return self.reply(200, "ok")
            m = NAME.match(self.path)
            values = read_store()
            if m and m.group(1) in values:
                return self.reply(200, values[m.group(1)])
            self.reply(404, "not found")

        def do_PUT(self):
            m = NAME.match(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            if not m or length > 65536:
                return self.reply(400, "bad request")
            values = read_store()
            values[m.group(1)] = self.rfile.read(length).decode()
            tmp = store + ".tmp"
            with open(tmp, "w") as handle:
                json.dump(values, handle)
            os.replace(tmp, store)
            self.reply(200, "stored")

        def log_message(self, *args):
            pass

    ThreadingHTTPServer((bind, port), Handler).serve_forever()


if __name__ == "__main__":
    main()
