"""Small real HTTP servers for the client tests, each on its own port in a thread:

- ``ScriptedRegistry`` answers from a script of (status, body), for exact retry and cache sequences;
- ``AuthGateway`` sits in front of the real registry, lets through only requests whose headers pass a check
  (basic credentials, a bearer token the ``TokenEndpoint`` issued and that has not expired) and records them;
- ``TokenEndpoint`` is an OAuth 2 token endpoint for the client-credentials grant with short-lived tokens.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import httpx

Handler = Callable[[str, str, dict[str, str], bytes], tuple[int, object]]


class HttpServer:
    """``handle(method, path, headers, body) -> (status, body)`` served on 127.0.0.1; a dict or list body is sent
    as JSON. Every request is recorded as (method, path, headers, body)."""

    def __init__(self, handle: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        owner = self

        class RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = dict(self.headers)
                owner.requests.append((self.command, self.path, headers, body))
                status, payload = handle(self.command, self.path, headers, body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class ScriptedRegistry(HttpServer):
    """Answers from a script: a list of (status, body) popped per request (the last one repeats)."""

    def __init__(self, script: list[tuple[int, object]], tls: ssl.SSLContext | None = None) -> None:
        self.script = list(script)
        super().__init__(self._next, tls)

    def _next(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, object]:
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]


def dead_url() -> str:
    """A URL nobody listens on (a port bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


UNAUTHORIZED = {"error_code": 401, "message": "Unauthorized"}


class AuthGateway(HttpServer):
    """Forwards requests whose headers pass ``allow(headers)`` to the registry at ``upstream`` and returns its
    answer; anything else gets 401 and never reaches the registry."""

    def __init__(self, upstream: str, allow: Callable[[dict[str, str]], bool]) -> None:
        self._upstream = httpx.Client(base_url=upstream, timeout=10.0)
        self._allow = allow
        self.rejected = 0  # requests answered 401
        super().__init__(self._forward)

    def _forward(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, object]:
        if not self._allow(headers):
            self.rejected += 1
            return 401, UNAUTHORIZED
        passed = {k: v for k, v in headers.items() if k.lower() in ("content-type", "accept")}
        resp = self._upstream.request(method, path, content=body or None, headers=passed)
        return resp.status_code, resp.content

    def authorizations(self) -> list[str | None]:
        return [h.get("Authorization") for _, _, h, _ in self.requests]

    def close(self) -> None:
        super().close()
        self._upstream.close()


class TokenEndpoint(HttpServer):
    """OAuth 2 client-credentials token endpoint: checks the client's HTTP basic credentials, the grant type and
    the scope, and issues ``tok-1``, ``tok-2``, ... valid for ``expires_in`` seconds. ``fail_next`` answers
    that many requests with 503 first."""

    def __init__(self, client_id: str, client_secret: str, scope: str | None, expires_in: float) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.scope = scope
        self.expires_in = expires_in
        self.fail_next = 0
        self.issued: dict[str, tuple[float, float]] = {}  # token -> (issued at, expires at), monotonic
        self._lock = threading.Lock()
        super().__init__(self._token)

    def _token(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, object]:
        with self._lock:
            if self.fail_next:
                self.fail_next -= 1
                return 503, {"error": "temporarily_unavailable"}
            if headers.get("Authorization") != basic(self.client_id, self.client_secret):
                return 401, {"error": "invalid_client", "error_description": "bad client credentials"}
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            if method != "POST" or form.get("grant_type") != "client_credentials":
                return 400, {"error": "unsupported_grant_type"}
            if form.get("scope") != self.scope:
                return 400, {"error": "invalid_scope"}
            token = f"tok-{len(self.issued) + 1}"
            now = time.monotonic()
            self.issued[token] = (now, now + self.expires_in)
            return 200, {"access_token": token, "token_type": "Bearer", "expires_in": self.expires_in}

    def revoke(self, token: str) -> None:
        issued, _ = self.issued[token]
        self.issued[token] = (issued, issued)

    def valid(self, authorization: str | None) -> bool:
        """An ``Authorization: Bearer`` header carrying a token issued here that has not expired."""
        if not authorization or not authorization.startswith("Bearer "):
            return False
        issued = self.issued.get(authorization.removeprefix("Bearer "))
        return issued is not None and time.monotonic() < issued[1]
