"""The query server's HTTP protocol (uvicorn's ``http`` class): a connection's key lookups are answered here,
without uvicorn's per-request machinery (an ASGI task, scope, two writes per answer); the first request that
is anything else hands the connection, with every byte not yet answered, to uvicorn's own protocol for good.

A key lookup is the hot path of interactive queries and is asked again by the instance that forwards it, so
each one costs CPU on two processes; on a busy machine the CPU a request needs is what its tail latency
follows. Handled here: ``GET /v1/stores/{store}/keys/{key}[?...]`` in HTTP/1.1 with no body, no upgrade, no
``Expect``, no ``Connection: close``; anything else (or anything unusual in the header block) goes to uvicorn,
so handing over too much is always safe. Requests on one connection are answered in order. Unlike uvicorn,
idle keep-alive connections are not timed out (the askers are our own pools, which keep them on purpose).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from http import HTTPStatus
from typing import Any, ClassVar, Protocol

__all__ = ["KeyLookupProtocol", "KeyLookups"]

_MAX_HEAD = 16 * 1024  # a longer head is uvicorn's to refuse
_HIGH_WATER = 64 * 1024  # unanswered bytes buffered before reading pauses (pipelined requests)
# In the lower-cased header block: a body, ``Expect``, or a ``Connection: close`` / ``upgrade`` (a header value
# that merely contains one of these is handed over too, which is harmless).
_UNUSUAL = (b"content-length", b"transfer-encoding", b"expect", b"upgrade", b"close")


#: Status, headers (without the length), body.
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


class KeyLookups(Protocol):
    """What the protocol asks of the query server."""

    def match(self, raw_path: bytes) -> tuple[str, str] | None:
        """(store, key) if ``raw_path`` asks for a key of a store."""
        ...

    def answer(self, store: str, key: str, query_string: bytes) -> Awaitable[Answer]:
        """Status, headers (without the length) and body; never raises."""
        ...


def _reason(status: int) -> bytes:
    """The reason phrase (a status the owner answered with may be one ``HTTPStatus`` does not know)."""
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b"Unknown"


class KeyLookupProtocol(asyncio.Protocol):
    """Built by uvicorn per connection with its own arguments, which the protocol handed over to gets too.
    Use ``for_lookups`` to bind the query server and uvicorn's protocol."""

    lookups: ClassVar[KeyLookups]
    fallback: ClassVar[type[asyncio.Protocol]]

    @classmethod
    def for_lookups(cls, lookups: KeyLookups, fallback: type[asyncio.Protocol]) -> type[KeyLookupProtocol]:
        return type("BoundKeyLookupProtocol", (cls,), {"lookups": lookups, "fallback": fallback})

    def __init__(self, config: Any, server_state: Any, app_state: dict[str, Any], **kwargs: Any) -> None:
        self._config, self._server_state, self._app_state = config, server_state, app_state
        self._transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._busy = False  # a lookup is being answered; later requests wait in the buffer
        self._paused = False
        self._closing = False  # shut down after the answer in progress
        self._task: asyncio.Task[None] | None = None

    # -- asyncio.Protocol -------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's transports do not subclass asyncio's
        self._server_state.connections.add(self)  # uvicorn shuts down and waits for what it lists

    def data_received(self, data: bytes) -> None:
        self._buf += data
        if self._busy:
            if len(self._buf) > _HIGH_WATER and not self._paused:
                self._paused = True
                self._transport.pause_reading()  # type: ignore[union-attr]
            return
        self._next()

    def connection_lost(self, exc: Exception | None) -> None:
        self._server_state.connections.discard(self)
        self._closing = True

    def shutdown(self) -> None:
        """uvicorn's graceful shutdown: close now if idle, else after the answer in progress."""
        self._closing = True
        if not self._busy and self._transport is not None:
            self._transport.close()

    # -- requests ---------------------------------------------------------------------------------------

    def _next(self) -> None:
        """Start answering the request at the head of the buffer, or hand over if it is not a plain lookup."""
        buf = self._buf
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > _MAX_HEAD:
                self._hand_over()
            return
        line_end = buf.find(b"\r\n")
        method, _, rest = bytes(buf[:line_end]).partition(b" ")
        target, _, version = rest.partition(b" ")
        path, _, query = target.partition(b"?")
        matched = self.lookups.match(path) if method == b"GET" and version == b"HTTP/1.1" else None
        headers = bytes(buf[line_end:end]).lower()
        if matched is None or any(word in headers for word in _UNUSUAL):
            self._hand_over()
            return
        del buf[: end + 4]
        self._busy = True
        self._task = asyncio.get_running_loop().create_task(self._answer(matched, query))  # referenced till done

    async def _answer(self, matched: tuple[str, str], query: bytes) -> None:
        status, headers, body = await self.lookups.answer(*matched, query)
        head = [b"HTTP/1.1 %d %s\r\n" % (status, _reason(status))]
        for name, value in (*self._server_state.default_headers, *headers, (b"content-length", b"%d" % len(body))):
            head += (name, b": ", value, b"\r\n")
        head += (b"\r\n", body)
        transport = self._transport
        assert transport is not None
        self._busy = False
        if transport.is_closing():  # the asker went away meanwhile
            return
        transport.write(b"".join(head))  # one write: one segment, one wake-up of the asker
        if self._closing:
            transport.close()
            return
        if self._paused:
            self._paused = False
            transport.resume_reading()
        if self._buf:
            self._next()

    def _hand_over(self) -> None:
        """From now on uvicorn's protocol serves this connection, starting with the bytes not yet answered."""
        transport = self._transport
        assert transport is not None
        protocol = self.fallback(
            config=self._config,
            server_state=self._server_state,  # type: ignore[call-arg]
            app_state=self._app_state,
        )
        self._server_state.connections.discard(self)
        protocol.connection_made(transport)
        transport.set_protocol(protocol)
        if self._paused:
            transport.resume_reading()
        data, self._buf = bytes(self._buf), bytearray()
        protocol.data_received(data)
