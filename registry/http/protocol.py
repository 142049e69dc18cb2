"""The HTTP/1.1 protocol the server runs: uvicorn's own (httptools, else h11) with the limits uvicorn lacks.

- **Header read timeout.** uvicorn waits for a request's headers forever, so a client that opens
  connections and sends its headers a byte at a time holds each one open (slowloris). Here the headers of a
  request must arrive within ``header_timeout`` seconds of its first byte: else the answer is 408 and the
  connection closes. A connection that sends nothing is closed after the keep-alive timeout, as an idle one
  is after a response.
- **Header size.** At most ``MAX_HEADER_BYTES`` of request line and headers (431), which httptools does not
  bound at all.
- **Confluent's envelope** on the protocol's own errors: a request the parser rejects is 400 with
  ``{"error_code": 400, "message": ...}``, not plain text.

The body's limits (size, read timeout) are checked in the app (``body.py``), where the body is read;
``body_arrived`` tells it when there is nothing left to wait for.
"""

from __future__ import annotations

import asyncio
import importlib
from http import HTTPStatus
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from registry.http.content import CT_V1
from registry.http.render import dumps

#: bytes of a request line and headers
MAX_HEADER_BYTES = 64 * 1024

_Base: Any = AutoHTTPProtocol  # the implementation uvicorn's "auto" picks
_base_data_received = _Base.data_received  # called directly: no super() lookup on every request
#: the request cycle of that implementation: the app's ``receive`` is its bound method. uvicorn's internals (checked
#: on 0.30-0.54): where a release lacks them, ``body_arrived`` answers False and bodies take the guarded read.
_Cycle: Any = getattr(importlib.import_module(_Base.__module__), "RequestResponseCycle", None)


def body_arrived(receive: Any) -> bool:
    """True when ``receive`` is the request cycle's of this protocol and the request's last byte has arrived:
    then the next ``receive()`` returns the rest of the body at once, without waiting for the client (uvicorn's
    cycle sets ``more_body`` False and its message event when the parser completes the request, and a
    ``receive`` waits only for that event). False for any other ``receive`` (a test's, a wrapper's).

    Worth the private read: with it and lookups keyed by their body, a cached POST lookup went from 192,155 to
    148,650 server instructions (``benchmarks/http_instructions.py``), which put it past 0.75x of the bare app."""
    cycle: Any = getattr(receive, "__self__", None)
    return type(cycle) is _Cycle and getattr(cycle, "more_body", True) is False


def guarded_protocol(header_timeout: float, max_header_bytes: int = MAX_HEADER_BYTES) -> type[asyncio.Protocol]:
    """The protocol class to give ``uvicorn.Config(http=...)``."""

    class GuardedHttpProtocol(_Base):
        _header_deadline: asyncio.TimerHandle | None = None
        _header_bytes = 0

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            # Nothing received yet: closed by the keep-alive timeout unless a request starts (uvicorn cancels
            # this timer on the first data it receives).
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            _base_data_received(self, data)
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                # a request being served (its headers are complete): the common case, kept to two inline
                # checks; as method calls they cost ~1,300 instructions per request over uvicorn's own protocol,
                # inline no measurable difference (callgrind, server side, as benchmarks/http_instructions.py)
                if self._header_deadline is not None:
                    self._disarm()
                    self._header_bytes = 0
                return
            if self.transport.is_closing():
                return
            # between requests, or a request's headers still arriving
            self._header_bytes += len(data)
            if self._header_bytes > max_header_bytes:
                self._reject(431, f"Request headers are larger than the limit of {max_header_bytes} bytes")
            elif self._header_deadline is None:
                self._header_deadline = self.loop.call_later(header_timeout, self._headers_timed_out)

        def send_400_response(self, msg: str) -> None:
            self._reject(400, msg)

        def _awaiting_headers(self) -> bool:
            """Between requests, or while a request's headers are still arriving."""
            cycle = self.cycle
            return cycle is None or bool(cycle.response_complete)

        def _headers_timed_out(self) -> None:
            self._header_deadline = None
            if self._awaiting_headers() and not self.transport.is_closing():
                self._reject(408, f"Request headers not received within {header_timeout:g} s (--header-timeout-ms)")

        def _disarm(self) -> None:
            if self._header_deadline is not None:
                self._header_deadline.cancel()
                self._header_deadline = None

        def _reject(self, status: int, message: str) -> None:
            self._disarm()
            body = dumps({"error_code": status, "message": message})
            head = (
                f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
                f"content-type: {CT_V1.decode()}\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
            )
            self.transport.write(head.encode() + body)
            self.transport.close()

    return GuardedHttpProtocol
