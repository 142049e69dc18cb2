"""Tools for hostile-input tests: a request sent over its own socket in parts, and the latency of
``GET /subjects`` measured while such a request is provably in flight.

"In flight" is proven, not assumed: a GET counts only if the hostile request had been (at least partly)
sent before the GET started and had still not been answered when the GET's answer arrived (its socket has
nothing to read). So the server held the hostile request during the whole GET.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import statistics
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

#: what the issue asks of a GET while a hostile request is in flight
GET_BUDGET = 0.1


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class RawRequest:
    """One HTTP/1.1 request on its own connection, written in parts: ``send_head()`` then ``send(...)``."""

    def __init__(
        self,
        url: str,
        method: str,
        path: str,
        *,
        headers: dict[str, str] | None = None,
        content_length: int | None = None,
        chunked: bool = False,
    ) -> None:
        host, port = urlsplit(url).hostname, urlsplit(url).port
        assert host is not None and port is not None
        self.sock = socket.create_connection((host, port), timeout=30)
        self.method, self.path = method, path
        self.headers = {"host": f"{host}:{port}", "content-type": "application/vnd.schemaregistry.v1+json"}
        self.headers.update(headers or {})
        if content_length is not None:
            self.headers["content-length"] = str(content_length)
        if chunked:
            self.headers["transfer-encoding"] = "chunked"
        self.chunked = chunked
        self.held = b""

    def head_bytes(self) -> bytes:
        lines = [f"{self.method} {self.path} HTTP/1.1", *(f"{k}: {v}" for k, v in self.headers.items()), "", ""]
        return "\r\n".join(lines).encode()

    def send_head(self) -> RawRequest:
        self.sock.sendall(self.head_bytes())
        return self

    def send(self, data: bytes) -> None:
        """Body bytes (one chunk when chunked)."""
        if self.chunked:
            data = b"%x\r\n%s\r\n" % (len(data), data)
        self.sock.sendall(data)

    def end_chunks(self) -> None:
        self.sock.sendall(b"0\r\n\r\n")

    def answered(self) -> bool:
        """Has the server started answering (or closed the connection)?"""
        return bool(select.select([self.sock], [], [], 0)[0])

    def answer(self, timeout: float = 60) -> Answer:
        self.sock.settimeout(timeout)
        data = b""
        while b"\r\n\r\n" not in data:
            part = self.sock.recv(65536)
            if not part:
                raise ConnectionError(f"closed without an answer (got {data!r})")
            data += part
        head, _, rest = data.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            part = self.sock.recv(65536)
            if not part:
                break
            rest += part
        return Answer(int(status_line.split()[1]), headers, rest[:length])

    def closed_by_server(self, timeout: float = 5) -> bool:
        """Does the server close the connection (after its answer)? A reset counts: when the server closes while
        bytes we sent are still unread on its side (a request cut off mid-headers), its kernel answers with RST."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        return True

    def close(self) -> None:
        self.sock.close()


def request(url: str, method: str, path: str, body: bytes = b"", *, hold: bool = True, **headers: str) -> RawRequest:
    """A request with a Content-Length; with ``hold`` its last byte (of the body, or of the headers when there
    is none) is held back, so that it is in flight until ``finish``."""
    r = RawRequest(url, method, path, headers=headers, content_length=len(body) if body or method != "GET" else None)
    message = r.head_bytes() + body
    r.held = message[-1:] if hold else b""
    r.sock.sendall(message[: len(message) - len(r.held)])
    return r


def finish(r: RawRequest) -> None:
    r.sock.sendall(r.held)


class AllOf:
    """Several requests in flight as one: answered once every one of them is."""

    def __init__(self, requests: list[RawRequest]) -> None:
        self.requests = requests

    def answered(self) -> bool:
        return all(r.answered() for r in self.requests)


class Reader:
    """A keep-alive connection that times ``GET /subjects``."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        assert parts.hostname is not None
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        self.get()  # connected and warm

    def get(self) -> float:
        start = time.perf_counter()
        self.conn.request("GET", "/subjects")
        response = self.conn.getresponse()
        body = response.read()
        elapsed = time.perf_counter() - start
        assert response.status == 200, (response.status, body)
        return elapsed

    def close(self) -> None:
        self.conn.close()


def gets_while_in_flight(url: str, hostile: RawRequest | AllOf, *, samples: int = 20, wait: float = 60) -> list[float]:
    """Latencies of GETs each answered while ``hostile`` (already sent, fully or partly) had no answer yet;
    stops after ``samples`` of them or once the hostile request is answered."""
    reader = Reader(url)
    found: list[float] = []
    deadline = time.monotonic() + wait
    try:
        while len(found) < samples and time.monotonic() < deadline and not hostile.answered():
            elapsed = reader.get()
            if not hostile.answered():  # still unanswered after this GET's answer: it was in flight throughout
                found.append(elapsed)
    finally:
        reader.close()
    return found


def assert_gets_fast(latencies: list[float], *, minimum: int = 3) -> None:
    """Enough GETs ran while the hostile request was in flight, and they answered within the budget (the
    median, so that one scheduling hiccup of a shared test machine is not a failure; a blocked event loop
    delays every one of them)."""
    assert len(latencies) >= minimum, f"only {len(latencies)} GETs ran while the hostile request was in flight"
    median = statistics.median(latencies)
    assert median < GET_BUDGET, (
        f"GET /subjects took {median * 1000:.0f} ms (median of {len(latencies)}) "
        f"while the hostile request was in flight: {[round(x * 1000) for x in latencies]}"
    )
