"""``protocol.body_arrived``: the read of a body that arrived whole skips the deadline machinery (``body.py``).

It reads uvicorn's request cycle, not a public API, so these tests run it on a real uvicorn server with our protocol:
a body sent in one piece is seen as arrived before the app reads it, and a body still on its way is not (then
the guarded read with its deadline is the one that must run). If a uvicorn release changes its cycle, the first
test fails here instead of every lookup silently taking the slower path.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from registry.http.protocol import body_arrived, guarded_protocol
from tests.support.ports import free_port
from tests.support.waiting import wait_for


class _Recorder:
    """An ASGI app answering 200 to every request after noting whether its body had arrived, then reading it."""

    def __init__(self) -> None:
        self.seen: list[tuple[bool, bytes]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        arrived = body_arrived(receive)
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.seen.append((arrived, body))
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


@pytest.fixture()
def served() -> Iterator[tuple[str, _Recorder]]:
    app = _Recorder()
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, http=guarded_protocol(5.0), log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, timeout=30, what="uvicorn to start")
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_a_body_sent_with_its_headers_has_arrived_before_it_is_read(served: tuple[str, _Recorder]) -> None:
    # One write, so one read on the server: the parser completes the request before the app runs. (A client that
    # writes the body apart from the headers, as httpx does, may find the app already called: then the guarded
    # read runs, as it must.)
    url, app = served
    body = b'{"schema": "\\"string\\""}'
    head = f"POST /subjects/s HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", _port(url))) as conn:
        conn.sendall(head + body)
        assert conn.recv(1024).startswith(b"HTTP/1.1 200")
    assert app.seen == [(True, body)]


def test_a_body_still_on_its_way_has_not_arrived(served: tuple[str, _Recorder]) -> None:
    url, app = served
    with socket.create_connection(("127.0.0.1", _port(url))) as conn:
        conn.sendall(b"POST /subjects/s HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234")
        time.sleep(0.3)  # the app is called with half the body
        conn.sendall(b"56789")
        assert conn.recv(1024).startswith(b"HTTP/1.1 200")
    assert app.seen == [(False, b"0123456789")]
