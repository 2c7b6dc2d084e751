"""The memory inspector's HTTP server (standard library ``http.server``).

Serves the static page (``langmem_cog/ui/static``: one HTML file, one script, one style
sheet, no CDN) and routes ``/api/*`` to :class:`~langmem_cog.ui.api.InspectorAPI`.
Only ``GET`` and ``HEAD`` are answered; every API endpoint is read-only.

Hardening for a local tool: it binds ``127.0.0.1`` by default; when bound to a loopback
address it answers only requests whose ``Host`` header names a loopback host (a web page
on another site cannot reach it through DNS rebinding); responses carry a strict
Content-Security-Policy (scripts and styles from the server itself only, no inline
script), ``X-Content-Type-Options: nosniff`` and ``X-Frame-Options: DENY``.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langmem_cog import CogMemConfig
    >>> from langmem_cog.memory import CogMemory
    >>> from langmem_cog.ui.api import InspectorAPI
    >>> api = InspectorAPI(CogMemory(CogMemConfig.preset("ephemeral"),
    ...                              embeddings=DeterministicFakeEmbedding(size=32)))
    >>> server = make_server(api, port=0)  # a free port
    >>> server.url.startswith("http://127.0.0.1:")
    True
    >>> server.server_close()
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from langmem_cog.errors import InvalidInputError
from langmem_cog.ui.api import InspectorAPI

__all__ = ["InspectorServer", "make_server", "serve_in_thread", "STATIC_FILES"]

logger = logging.getLogger(__name__)

#: URL path -> (file in ``langmem_cog/ui/static``, content type).
STATIC_FILES: dict[str, tuple[str, str]] = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}

_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def _is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_of(header: str) -> str:
    header = header.strip()
    if header.startswith("["):  # [::1]:8765
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _read_static(name: str) -> bytes:
    return (resources.files("langmem_cog.ui") / "static" / name).read_bytes()


class _Handler(BaseHTTPRequestHandler):
    server: InspectorServer
    server_version = "langmem-cog-inspector"

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - BaseHTTPRequestHandler's signature
        logger.info("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: bytes, content_type: str, head: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", _CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, status: int, payload: dict[str, Any], head: bool = False) -> None:
        body = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")
        self._send(status, body, "application/json; charset=utf-8", head)

    def _serve(self, head: bool) -> None:
        if self.server.loopback_only and not _is_loopback(_host_of(self.headers.get("Host", ""))):
            self._json(HTTPStatus.FORBIDDEN, {"error": "this inspector answers only requests to localhost"}, head)
            return
        url = urlsplit(self.path)
        if url.path.startswith("/api/"):
            try:
                params = parse_qs(url.query, keep_blank_values=True, strict_parsing=False, max_num_fields=20)
            except ValueError as exc:
                self._json(HTTPStatus.BAD_REQUEST, {"error": f"bad query string: {exc}"}, head)
                return
            try:
                status, payload = self.server.api.handle(url.path, params)
            except Exception:  # a bug, not bad input: logged with its traceback, answered as JSON
                logger.exception("inspector request %s failed", url.path)
                status, payload = 500, {"error": "internal error: see the server's log"}
            self._json(status, payload, head)
            return
        static = STATIC_FILES.get(url.path)
        if static is None:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no page {url.path!r}: open /"}, head)
            return
        name, ctype = static
        self._send(HTTPStatus.OK, _read_static(name), ctype, head)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._serve(head=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(head=True)


class InspectorServer(ThreadingHTTPServer):
    """A threading HTTP server bound to one :class:`InspectorAPI`.

    Attributes:
        api: The API the ``/api/*`` paths are routed to.
        loopback_only: Whether requests must name a loopback ``Host`` (set when bound to one).
    """

    daemon_threads = True

    def __init__(self, address: tuple[str, int], api: InspectorAPI) -> None:
        self.api = api
        self.loopback_only = _is_loopback(address[0])
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        """The page's address (``http://host:port/``)."""
        host, port = self.server_address[:2]
        host = str(host)
        return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


class _InspectorServer6(InspectorServer):
    address_family = socket.AF_INET6


def make_server(api: InspectorAPI, host: str = "127.0.0.1", port: int = 8765) -> InspectorServer:
    """Bind an :class:`InspectorServer` (``port=0``: a free port); call ``serve_forever()`` to run it.

    Raises:
        InvalidInputError: If ``port`` is not in 0..65535 or ``host`` is empty.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise InvalidInputError(f"port={port!r} is invalid: pass 0..65535 (0 picks a free port)")
    if not host:
        raise InvalidInputError("host is empty: pass an address to bind, e.g. 127.0.0.1")
    cls = _InspectorServer6 if ":" in host else InspectorServer
    return cls((host.strip("[]"), port), api)


def serve_in_thread(server: InspectorServer) -> threading.Thread:
    """Run ``server.serve_forever()`` in a daemon thread (stop it with ``server.shutdown()``)."""
    thread = threading.Thread(target=server.serve_forever, name="langmem-cog-inspector", daemon=True)
    thread.start()
    return thread
