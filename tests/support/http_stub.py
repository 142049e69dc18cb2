"""A stand-in HTTP server in the test process, for what a test only needs to answer one thing and record who
asked: a token issuer's JWKS (``credentials.Issuer``), a registry that records the credentials it is sent."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StubServer:
    """Answers every GET with 200, ``content_type`` and the bytes ``body()`` returns then; ``headers`` holds
    each GET's request headers, in order. Serves from a daemon thread on 127.0.0.1 until ``close()``."""

    def __init__(self, content_type: str, body: Callable[[], bytes]) -> None:
        self.headers: list[dict[str, str]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                stub.headers.append(dict(self.headers))
                payload = body()
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass  # no access log on the test output

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> StubServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
