"""The memory inspector's HTTP server (standard library ``http.server``).

Serves the static page (``langmem_cog/ui/static``: one HTML file, one script, one style
sheet, no CDN) and routes ``/api/*`` to :class:`~langmem_cog.ui.api.InspectorAPI`.
Only ``GET`` and ``HEAD`` are answered; every API endpoint is read-only and writes nothing to disk
(see :class:`~langmem_cog.ui.readonly.ReadOnlyMemory`).

Hardening for a local tool: it binds ``127.0.0.1`` by default; when bound to a loopback
address it answers only requests whose ``Host`` header names a loopback host (a web page
on another site cannot reach it through DNS rebinding); responses carry a strict
Content-Security-Policy (scripts and styles from the server itself only, no inline
script), ``X-Content-Type-Options: nosniff`` and ``X-Frame-Options: DENY``.

Access token: every ``/api/*`` request must carry the server's token, as
``Authorization: Bearer <token>`` or a ``token`` query parameter (compared in constant time);
without it the answer is HTTP 401 with a JSON error. The token is random
(``secrets.token_urlsafe(24)``) unless one is given; :attr:`InspectorServer.url` is the page's
address with ``?token=...``, which the page reads and sends on its API calls as the header. The
static page (HTML, script, style sheet) is served without the token: it holds no data. Loopback
binding alone does not protect a memory: any local user or process can connect to
``127.0.0.1``. ``auth=False`` (``langmem-cog ui --no-auth``) turns the check off, for a loopback
address only, with a warning.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langmem_cog import CogMemConfig
    >>> from langmem_cog.memory import CogMemory
    >>> from langmem_cog.ui.api import InspectorAPI
    >>> api = InspectorAPI(CogMemory(CogMemConfig.preset("ephemeral"),
    ...                              embeddings=DeterministicFakeEmbedding(size=32)))
    >>> server = make_server(api, port=0)  # a free port, a random token
    >>> server.base_url.startswith("http://127.0.0.1:"), server.url == f"{server.base_url}?token={server.token}"
    (True, True)
    >>> server.server_close()
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import re
import secrets
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from langmem_cog.errors import InvalidInputError
from langmem_cog.ui.api import InspectorAPI

__all__ = ["InspectorServer", "make_server", "serve_in_thread", "new_token", "check_token", "STATIC_FILES",
           "MIN_TOKEN_CHARS"]

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
#: Shortest accepted ``--token`` (a generated one has 32 characters).
MIN_TOKEN_CHARS = 16
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9._~-]+")
_UNAUTHORIZED = ("this inspector needs its access token: open the address it printed at start "
                 "(http://127.0.0.1:PORT/?token=...), or send the header 'Authorization: Bearer <token>'")


def new_token() -> str:
    """A random access token (``secrets.token_urlsafe(24)``: 32 URL-safe characters)."""
    return secrets.token_urlsafe(24)


def check_token(token: Any) -> str:
    """``token`` if it is a usable access token, else :class:`InvalidInputError` saying why.

    A token is at least :data:`MIN_TOKEN_CHARS` characters of ``A-Z a-z 0-9 . _ ~ -`` (it travels
    in a URL and an HTTP header unescaped).
    """
    if not isinstance(token, str) or not _TOKEN_CHARS.fullmatch(token) or len(token) < MIN_TOKEN_CHARS:
        raise InvalidInputError(
            f"the access token must be at least {MIN_TOKEN_CHARS} characters of A-Z a-z 0-9 . _ ~ - "
            "(leave it out to get a random one)"
        )
    return token


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
        line = format % args
        if self.server.token:  # the page's address carries it: keep it out of the log
            line = line.replace(self.server.token, "<token>")
        logger.info("%s %s", self.address_string(), line)

    def _send(self, status: int, body: bytes, content_type: str, head: bool = False) -> None:
        self.send_response(status)
        if status == HTTPStatus.UNAUTHORIZED:
            self.send_header("WWW-Authenticate", 'Bearer realm="langmem-cog inspector"')
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

    def _authorized(self, params: dict[str, list[str]]) -> bool:
        """Whether the request carries the server's token (the header if sent, else ``?token=``)."""
        token = self.server.token
        if token is None:
            return True
        header = self.headers.get("Authorization")
        if header is not None:
            scheme, _, given = header.strip().partition(" ")
            if scheme.lower() != "bearer":
                return False
        else:
            values = params.get("token") or []
            if len(values) != 1:
                return False
            given = values[0]
        return hmac.compare_digest(given.strip().encode("utf-8"), token.encode("utf-8"))

    def _serve(self, head: bool) -> None:
        if self.server.loopback_only and not _is_loopback(_host_of(self.headers.get("Host", ""))):
            self._json(HTTPStatus.FORBIDDEN, {"error": "this inspector answers only requests to localhost"}, head)
            return
        url = urlsplit(self.path)
        if url.path.startswith("/api/"):
            bad_query = None
            try:
                params = parse_qs(url.query, keep_blank_values=True, strict_parsing=False, max_num_fields=20)
            except ValueError as exc:
                params, bad_query = {}, exc  # only the header can then carry the token
            if not self._authorized(params):
                self._json(HTTPStatus.UNAUTHORIZED, {"error": _UNAUTHORIZED}, head)
                return
            if bad_query is not None:
                self._json(HTTPStatus.BAD_REQUEST, {"error": f"bad query string: {bad_query}"}, head)
                return
            params.pop("token", None)
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

    def _read_only(self) -> None:
        """Any method but GET and HEAD: a JSON error, as every other failure of the API (it writes nothing)."""
        self._json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": f"{self.command} is not supported: the inspector is "
                                                            "read-only (GET and HEAD only)"}, False)

    do_POST = do_PUT = do_DELETE = do_PATCH = _read_only  # noqa: N815 - http.server's naming


class InspectorServer(ThreadingHTTPServer):
    """A threading HTTP server bound to one :class:`InspectorAPI`.

    Args:
        address: ``(host, port)`` to bind.
        api: The API the ``/api/*`` paths are routed to.
        token: The access token every ``/api/*`` request must carry (``None``: a random one).
        auth: ``False`` turns the token check off (loopback addresses only; a warning is logged).

    Attributes:
        api: The API the ``/api/*`` paths are routed to.
        loopback_only: Whether requests must name a loopback ``Host`` (set when bound to one).
        token: The access token, or ``None`` when the check is off.

    Raises:
        InvalidInputError: If ``token`` is unusable (:func:`check_token`), given with ``auth=False``,
            or ``auth=False`` on an address that is not loopback.
    """

    daemon_threads = True

    def __init__(self, address: tuple[str, int], api: InspectorAPI, *, token: str | None = None,
                 auth: bool = True) -> None:
        self.api = api
        self.loopback_only = _is_loopback(address[0])
        if auth:
            self.token: str | None = new_token() if token is None else check_token(token)
        elif token is not None:
            raise InvalidInputError("a token and auth=False (--token and --no-auth) exclude each other: pick one")
        elif not self.loopback_only:
            raise InvalidInputError(f"auth=False (--no-auth) is for a loopback address only, not {address[0]!r}: "
                                    "keep the token to serve another address")
        else:
            self.token = None
        super().__init__(address, _Handler)
        if self.token is None:
            logger.warning("the memory inspector on %s runs WITHOUT an access token (--no-auth): any local user "
                           "or process can read every namespace", self.base_url)

    @property
    def base_url(self) -> str:
        """The page's address without the token (``http://host:port/``)."""
        host, port = self.server_address[:2]
        host = str(host)
        return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"

    @property
    def url(self) -> str:
        """The address to open: :attr:`base_url` with ``?token=...`` (without it when the check is off)."""
        return self.base_url if self.token is None else f"{self.base_url}?token={quote(self.token, safe='')}"


class _InspectorServer6(InspectorServer):
    address_family = socket.AF_INET6


def make_server(api: InspectorAPI, host: str = "127.0.0.1", port: int = 8765, *, token: str | None = None,
                auth: bool = True) -> InspectorServer:
    """Bind an :class:`InspectorServer` (``port=0``: a free port); call ``serve_forever()`` to run it.

    Args:
        api: The API to serve.
        host: Address to bind.
        port: Port (0: a free one).
        token: The access token (``None``: a random one; see :attr:`InspectorServer.url`).
        auth: ``False``: no token check (loopback only, logged as a warning).

    Raises:
        InvalidInputError: If ``port`` is not in 0..65535, ``host`` is empty, or the token settings are
            invalid (see :class:`InspectorServer`).
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise InvalidInputError(f"port={port!r} is invalid: pass 0..65535 (0 picks a free port)")
    if not host:
        raise InvalidInputError("host is empty: pass an address to bind, e.g. 127.0.0.1")
    cls = _InspectorServer6 if ":" in host else InspectorServer
    return cls((host.strip("[]"), port), api, token=token, auth=auth)


def serve_in_thread(server: InspectorServer) -> threading.Thread:
    """Run ``server.serve_forever()`` in a daemon thread (stop it with ``server.shutdown()``)."""
    thread = threading.Thread(target=server.serve_forever, name="langmem-cog-inspector", daemon=True)
    thread.start()
    return thread
