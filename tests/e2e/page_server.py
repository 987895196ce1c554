"""The web server the remote Chromium loads its test pages from (stdlib only).

Run *inside* a test host's network namespace, so the remote browser reaches it on its
own loopback, exactly like a dev server on a dev VM::

    ip netns exec csgw-h1 python3 tests/e2e/page_server.py

It listens on two ports of 127.0.0.1 (two origins, ``a`` and ``b``, so a page on ``a``
can make a CORS-blocked request to ``b``) and keeps a third port bound but not
listening, so a connection there is refused (``net::ERR_CONNECTION_REFUSED``; Chrome
would refuse a well-known port such as 1 itself, with ``net::ERR_UNSAFE_PORT``). The
first line on stdout is JSON ``{"a": port, "b": port, "refused": port}``. The server
stops when its stdin closes (or on SIGTERM).

Secrets come from the environment (``CSGW_PAGE_AUTH_SECRET``,
``CSGW_PAGE_COOKIE_SECRET``) and never appear verbatim in a response body or a URL,
so a secret seen in a tool result or the call log can only have come from a header.
The page carries the Authorization value base64-encoded and decodes it in JS.

Pages and endpoints (``PAGES`` below lists them with what they do): one that does
everything DevTools shows (console at every level, an uncaught exception with a
stack, an unhandled rejection, a 404, a refused connection, a CORS-blocked fetch, a
cookie set by ``Set-Cookie`` and sent back with an ``Authorization`` header, a JSON,
a 300 kB text and a PNG body, a POST body), dialogs of every kind, a loop of N log
lines, a tall page and a box of known size.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import signal
import socket
import struct
import sys
import threading
import zlib
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import parse_qs, parse_qsl, urlsplit

AUTH_SECRET = os.environ.get("CSGW_PAGE_AUTH_SECRET", "auth-secret-unset")
COOKIE_SECRET = os.environ.get("CSGW_PAGE_COOKIE_SECRET", "cookie-secret-unset")

BIG_LINE = "csgw-big-text line {:06d} " + "." * 48 + "\n"  # 75 bytes
BIG_LINES = 4000  # 300,000 bytes
IMAGE_SIZE = (37, 23)
BOX_SIZE = (240, 120)  # CSS pixels of #box on /box.html
TALL_HEIGHT = 4000  # CSS pixels of /tall.html


BROWSE_DIR = Path(__file__).resolve().with_name("browse_site")
FIXTURE_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "pages"
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_FILE_TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
               ".svg": "image/svg+xml", ".gif": "image/gif",
               ".js": "text/javascript; charset=utf-8"}


def download_bytes(size: int) -> bytes:
    """The body of ``/download/<name>?bytes=N``: every byte value, in an order that depends
    on ``size`` only, so a test knows the file the browser downloaded byte for byte."""
    return random.Random(size).randbytes(size)


def downloads_html(sizes: dict[str, int]) -> str:
    """Links to files served as attachments (the browser downloads them): one per size."""
    links = "".join(f'<li><a href="/download/{name}?bytes={size}">{name}</a></li>'
                    for name, size in sizes.items())
    return ("<!doctype html>\n<html><head><title>csgw-downloads</title></head><body>"
            f'<ul>{links}<li><a href="/download-broken?bytes=4000000">broken.bin</a></li>'
            "</ul></body></html>\n")


def big_text() -> str:
    return "".join(BIG_LINE.format(i) for i in range(BIG_LINES))


def png_bytes(width: int, height: int) -> bytes:
    """A valid RGB PNG of ``width`` x ``height`` (a gradient, so it is not all zeros)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(
        b"\x00" + b"".join(bytes((x * 7 % 256, y * 11 % 256, 128)) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


# Every page names an inline icon, so Chrome makes no /favicon.ico request of its own
# and the requests a page makes are exactly the ones it asks for.
NO_FAVICON = '<link rel="icon" href="data:,">'

DATA_JSON = {"csgw": "data-json", "items": [1, 2, 3]}

# /console.js — line numbers matter: tests look for "console.js:<line>".
CONSOLE_JS = """\
console.log('csgw-log-level', 1);
console.info('csgw-info-level');
console.warn('csgw-warn-level');
console.error('csgw-error-level');
console.debug('csgw-debug-level');
"""
CONSOLE_LINES = {"log": 1, "info": 2, "warn": 3, "error": 4, "debug": 5}

# /thrower.js — an uncaught exception two frames deep, thrown on line 2.
THROWER_JS = """\
function csgwInner() {
  throw new Error('csgw-uncaught-exception');
}
function csgwOuter() { csgwInner(); }
csgwOuter();
"""
THROWER_LINE = 2


def devtools_html(ports: dict[str, int]) -> str:
    token = base64.b64encode(AUTH_SECRET.encode()).decode()
    return f"""<!doctype html>
<html><head><title>csgw-devtools</title>
<script src="/console.js"></script>
<script src="/thrower.js"></script>
<script>Promise.reject(new Error('csgw-unhandled-rejection'));</script>
</head><body>
<p id="p">devtools page</p>
<img id="img" src="/api/image.png" width="37" height="23">
<script>
window.csgwDone = (async () => {{
  const out = {{}};
  out.notFound = (await fetch('/missing.json')).status;
  try {{ await fetch('http://127.0.0.1:{ports["refused"]}/refused'); out.refused = 'loaded'; }}
  catch (e) {{ out.refused = String(e); }}
  try {{ await fetch('http://127.0.0.1:{ports["b"]}/api/data.json?cross-origin');
         out.cors = 'loaded'; }}
  catch (e) {{ out.cors = String(e); }}
  out.setCookie = (await fetch('/set-cookie')).status;
  const auth = await fetch('/api/auth',
                           {{headers: {{'Authorization': 'Bearer ' + atob('{token}')}}}});
  out.auth = await auth.json();
  out.json = await (await fetch('/api/data.json')).json();
  out.bigLength = (await (await fetch('/api/big.txt')).text()).length;
  out.pngLength = (await (await fetch('/api/image.png')).arrayBuffer()).byteLength;
  out.echo = await (await fetch('/api/echo', {{method: 'POST',
    headers: {{'Content-Type': 'application/json'}},
    body: JSON.stringify({{csgw: 'csgw-post-body'}})}})).json();
  await new Promise(r => document.getElementById('img').complete ? r() :
                    document.getElementById('img').addEventListener('load', r));
  return out;
}})();
</script>
</body></html>
"""


DIALOGS_HTML = """<!doctype html>
<html><head><title>csgw-dialogs</title></head><body>
<p>dialogs</p>
<script>
window.csgwResults = [];
function later(fn) {
  setTimeout(() => { window.csgwResults.push(fn()); }, 100);
  return 'scheduled';
}
function openAlert(text) { return later(() => alert(text)); }
function openConfirm(text) { return later(() => confirm(text)); }
function openPrompt(text, dflt) { return later(() => prompt(text, dflt)); }
</script>
</body></html>
"""

BEFOREUNLOAD_HTML = """<!doctype html>
<html><head><title>csgw-beforeunload</title></head><body>
<p>leaving asks first</p>
<script>
window.addEventListener('beforeunload', (e) => { e.preventDefault(); e.returnValue = 'stay'; });
</script>
</body></html>
"""


def many_html(n: int) -> str:
    return f"""<!doctype html>
<html><head><title>csgw-many</title></head><body>
<script>for (let i = 0; i < {n}; i++) console.log('csgw-many ' + i);</script>
</body></html>
"""


TALL_HTML = f"""<!doctype html>
<html><head><title>csgw-tall</title>
<style>html, body {{ margin: 0; }} #tall {{ height: {TALL_HEIGHT}px;
  background: linear-gradient(#c33, #33c); }}</style></head>
<body><div id="tall">tall</div></body></html>
"""

BOX_HTML = f"""<!doctype html>
<html><head><title>csgw-box</title>
<style>body {{ margin: 0; }} #box {{ position: absolute; left: 50px; top: 60px;
  width: {BOX_SIZE[0]}px; height: {BOX_SIZE[1]}px; background: #2a7; border: 0; }}</style>
</head><body><button id="box">box button</button></body></html>
"""

def fetches_html(n: int) -> str:
    return f"""<!doctype html>
<html><head><title>csgw-fetches</title></head><body>
<script>
window.csgwDone = (async () => {{
  for (let i = 0; i < {n}; i++) await fetch('/api/data.json?i=' + i);
  return {n};
}})();
</script>
</body></html>
"""


SIGNIN_HTML = f"""<!doctype html>
<html><head><title>csgw-signin</title></head><body>
<script>
window.csgwDone = (async () => {{
  await fetch('/set-cookie');
  localStorage.setItem('token', {json.dumps("LS" + AUTH_SECRET[::-1])});  // not verbatim
  localStorage.setItem('user', 'csgw');
  return localStorage.length;
}})();
</script>
</body></html>
"""


POPUP_HTML = """<!doctype html>
<html><head><title>csgw-popup</title></head><body>
<script>console.warn('csgw-popup-loaded');</script>
</body></html>
"""


def history_html(n: int) -> str:
    """A page of a history walk: served cacheable (no ``no-store``), so Chrome may keep it
    in its back/forward cache; ``csgwShows`` lists each ``pageshow`` (true: restored)."""
    return (f"<!doctype html>\n<html><head><title>csgw-history-{n}</title></head><body>"
            f"<h1>History page {n}</h1><script>window.csgwShows = [];"
            "addEventListener('pageshow', e => window.csgwShows.push(e.persisted));"
            "</script></body></html>\n")


def echo_html(query: str) -> str:
    """The page a GET form lands on: every submitted field, in order, as ``name = value``."""
    items = "".join(f"<li>{escape(k)} = {escape(v)}</li>"
                    for k, v in parse_qsl(query, keep_blank_values=True))
    return ("<!doctype html>\n<html><head><title>csgw-echo</title></head><body>"
            f"<h1>Submitted</h1><ul>{items or '<li>nothing</li>'}</ul>"
            '<p><a href="/browse/form.html">Back to the form</a></p></body></html>\n')


def site_file(directory: Path, name: str,
              replacements: dict[str, str]) -> tuple[bytes | str, str] | None:
    """A page file (text with its placeholders filled in) and its type, or None."""
    if not _FILE_NAME.match(name) or ".." in name:
        return None
    path = directory / name
    kind = _FILE_TYPES.get(path.suffix)
    if kind is None or not path.is_file():
        return None
    if not kind.startswith("text/"):
        return path.read_bytes(), kind
    text = path.read_text()
    for placeholder, value in replacements.items():
        text = text.replace(placeholder, value)
    return text, kind


PAGES = {
    "/devtools.html": "everything DevTools shows (see devtools_html)",
    "/console.js": "console at every level, known lines",
    "/thrower.js": "uncaught exception with a two-frame stack",
    "/api/data.json": "a JSON body (no CORS header: cross-origin reads are blocked)",
    "/api/big.txt": "a 300,000-byte text body",
    "/api/image.png": "a 37x23 PNG",
    "/api/auth": "checks the Authorization header and the cookie; says whether they matched",
    "/api/echo": "POST: how many bytes came",
    "/api/headers": "the request headers it got, and how many requests reached it so far",
    "/set-cookie": "sets the secret cookie with Set-Cookie",
    "/signin.html": "a sign-in: the secret cookie (as /set-cookie), localStorage token and user",
    "/dialogs.html": "openAlert/openConfirm/openPrompt(text) open a dialog 100 ms later",
    "/beforeunload.html": "asks before leaving",
    "/many.html?n=N": "logs N lines",
    "/fetches.html?n=N": "fetches /api/data.json?i=0..N-1 one after the other",
    "/tall.html": f"{TALL_HEIGHT} px tall",
    "/downloads.html?NAME=BYTES&…": "links to attachments NAME of BYTES each, and broken.bin",
    "/download/<name>?bytes=N": "an attachment of N bytes (download_bytes), named <name>",
    "/download-broken?bytes=N": "an attachment that says N bytes, sends half, and hangs up",
    "/box.html": f"a {BOX_SIZE[0]}x{BOX_SIZE[1]} button",
    "/popup.html": "logs a warning while loading",
    "/history.html?n=N": "page N of a history walk, cacheable (back/forward cache)",
    "/browse/<file>": "the page-view test pages (tests/e2e/browse_site/)",
    "/browse/echo?…": "shows the query string it got as `name = value` items",
    "/fixture/<file>": "the renderer's captured pages (fixtures/pages/)",
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "csgw-pages/1"
    ports: ClassVar[dict[str, int]] = {}
    served: ClassVar[list[int]] = [0]  # requests /api/headers answered (routes must skip it)
    served_lock: ClassVar[threading.Lock] = threading.Lock()

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes | str, content_type: str,
              extra: dict[str, str] | None = None) -> None:
        if isinstance(body, str) and content_type.startswith("text/html"):
            body = body.replace("<head>", f"<head>{NO_FAVICON}", 1)
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if not self.path.startswith("/history.html"):
            self.send_header("Cache-Control", "no-store")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        html = "text/html; charset=utf-8"
        js = "text/javascript; charset=utf-8"
        path = url.path
        if path == "/":
            self._send(200, "<title>csgw-pages</title><pre>" + "\n".join(PAGES) + "</pre>", html)
        elif path == "/devtools.html":
            self._send(200, devtools_html(self.ports), html)
        elif path == "/console.js":
            self._send(200, CONSOLE_JS, js)
        elif path == "/thrower.js":
            self._send(200, THROWER_JS, js)
        elif path == "/api/data.json":
            self._send(200, json.dumps(DATA_JSON), "application/json")
        elif path == "/api/big.txt":
            self._send(200, big_text(), "text/plain; charset=utf-8")
        elif path == "/api/image.png":
            self._send(200, png_bytes(*IMAGE_SIZE), "image/png")
        elif path == "/api/auth":
            cookies = self.headers.get("Cookie", "")
            result = {
                "authorization_ok": self.headers.get("Authorization") == f"Bearer {AUTH_SECRET}",
                "cookie_ok": f"sid={COOKIE_SECRET}" in [c.strip() for c in cookies.split(";")],
            }
            self._send(200, json.dumps(result), "application/json")
        elif path == "/api/headers":
            with self.served_lock:
                self.served[0] += 1
                served = self.served[0]
            self._send(200, json.dumps({"headers": dict(self.headers.items()),
                                        "served": served}), "application/json")
        elif path == "/set-cookie":
            self._send(200, "cookie set", "text/plain",
                       {"Set-Cookie": f"sid={COOKIE_SECRET}; Path=/; HttpOnly; SameSite=Lax"})
        elif path == "/signin.html":
            self._send(200, SIGNIN_HTML, html)
        elif path == "/dialogs.html":
            self._send(200, DIALOGS_HTML, html)
        elif path == "/beforeunload.html":
            self._send(200, BEFOREUNLOAD_HTML, html)
        elif path == "/many.html":
            self._send(200, many_html(int(query.get("n", ["10"])[0])), html)
        elif path == "/fetches.html":
            self._send(200, fetches_html(int(query.get("n", ["10"])[0])), html)
        elif path == "/tall.html":
            self._send(200, TALL_HTML, html)
        elif path == "/box.html":
            self._send(200, BOX_HTML, html)
        elif path == "/history.html":
            self._send(200, history_html(int(query.get("n", ["1"])[0])), html)
        elif path == "/popup.html":
            self._send(200, POPUP_HTML, html)
        elif path == "/downloads.html":
            self._send(200, downloads_html({k: int(v[0]) for k, v in query.items()}), html)
        elif path.startswith("/download/") and _FILE_NAME.match(path[10:]):
            self._send(200, download_bytes(int(query.get("bytes", ["1000"])[0])),
                       "application/octet-stream",
                       {"Content-Disposition": f'attachment; filename="{path[10:]}"'})
        elif path == "/download-broken":
            self._broken(int(query.get("bytes", ["1000000"])[0]))
        elif path == "/browse/echo":
            self._send(200, echo_html(url.query), html)
        elif path.startswith(("/browse/", "/fixture/")):
            self._site_file(path)
        else:
            self._send(404, f"no page {path}", "text/plain")

    def _broken(self, size: int) -> None:
        """Say ``size`` bytes, send half, hang up: the browser's download is interrupted
        (no ETag or Last-Modified, so it cannot resume it)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Disposition", 'attachment; filename="broken.bin"')
        self.send_header("Content-Length", str(size))
        self.end_headers()
        self.wfile.write(download_bytes(size)[: size // 2])
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def _site_file(self, path: str) -> None:
        cross_site = f"http://localhost:{self.ports['b']}"
        prefix, _, name = path[1:].partition("/")
        found = (site_file(BROWSE_DIR, name, {"{{CROSS_SITE}}": cross_site})
                 if prefix == "browse" else
                 site_file(FIXTURE_DIR, name, {"{{CROSS_ORIGIN}}": f"{cross_site}/fixture"}))
        if found is None:
            self._send(404, f"no page {path}", "text/plain")
        else:
            self._send(200, *found)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if urlsplit(self.path).path == "/api/echo":
            self._send(200, json.dumps({"received_bytes": len(body)}), "application/json")
        else:
            self._send(404, "no such endpoint", "text/plain")


def main() -> int:
    # a second host can serve origin ``a`` at the first's port: one origin on two hosts
    port_a = int(os.environ.get("CSGW_PAGE_PORT_A", "0"))
    servers = [ThreadingHTTPServer(("127.0.0.1", port), Handler) for port in (port_a, 0)]
    refused = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    refused.bind(("127.0.0.1", 0))  # bound, never listening: connections get RST
    ports = {"a": servers[0].server_address[1], "b": servers[1].server_address[1],
             "refused": refused.getsockname()[1]}
    Handler.ports = ports
    for server in servers:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def watch_stdin() -> None:
        sys.stdin.buffer.read()  # returns at EOF: the test process went away
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    sys.stdout.write(json.dumps(ports) + "\n")
    sys.stdout.flush()
    stop.wait()
    for server in servers:
        server.shutdown()
        server.server_close()
    refused.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
