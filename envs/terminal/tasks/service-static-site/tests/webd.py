"""webd: a tiny static file server (standard library).   python3 webd.py --config /etc/webd/webd.ini

[http] listen = HOST:PORT        where to listen
[site] root = FOLDER             the files served; index = NAME (served for a folder's URL)
[types] EXT = MIME               extra content types (e.g. svg = image/svg+xml)
"""

import argparse
import configparser
import mimetypes
import os
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--config", default="/etc/webd/webd.ini")
config = configparser.ConfigParser()
config.read(parser.parse_args().config)
host, _, port = config["http"]["listen"].rpartition(":")
root = config["site"]["root"]
index = config["site"].get("index", "index.html")
for ext, mime in config["types"].items() if config.has_section("types") else []:
    mimetypes.add_type(mime, "." + ext.lstrip("."))


class Handler(SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=root, **kwargs)

    def send_head(self):
        path = self.translate_path(self.path)
        if os.path.isdir(path) and self.path.endswith("/"):
            self.path = self.path + index
        return super().send_head()

    def list_directory(self, path):
        self.send_error(404, "not found")
        return None

    def log_message(self, *args):
        pass


ThreadingHTTPServer((host, int(port)), Handler).serve_forever()
