"""Request bodies read within the registry's limits: at most ``max_bytes`` (else 413), sent within ``timeout``
seconds (else 408), both checked while the body arrives, chunk by chunk, so a chunked upload without a
``Content-Length`` is stopped as soon as it passes the limit and a client that trickles its body is cut off.

Both answers carry ``Connection: close``: the rest of the body is never read, so the connection cannot
carry another request.

A body that has arrived whole before it is read (the common case: a small request in one packet) is read
without the deadline: the server hands it over at once, so there is nothing to time out
(``protocol.body_arrived``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from registry import errors
from registry.http.content import header
from registry.http.protocol import body_arrived

Receive = Any


#: how often waiting body reads are checked against their deadlines (a 408 comes up to this much late)
SWEEP_INTERVAL = 0.25


class _Read:
    """One request's body read, while it waits for a message from the client."""

    __slots__ = ("deadline", "expired", "task")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.task: asyncio.Task[Any] | None = None
        self.expired = False


class BodyLimits:
    def __init__(self, max_bytes: int, timeout: float) -> None:
        self.max_bytes = max_bytes
        self.timeout = timeout
        # The body timeout costs no timer per request (a timer, or ``asyncio.wait_for`` which starts a task per
        # message, would cost a cached lookup a good part of its time): reads that wait for the client are in
        # ``_waiting``, and one sweep, scheduled while any waits, cancels those past their deadline.
        self._waiting: set[_Read] = set()
        self._sweep: asyncio.TimerHandle | None = None
        self._sweep_loop: asyncio.AbstractEventLoop | None = None

    def guard(self, scope: dict[str, Any], receive: Receive) -> Receive:
        """A ``receive`` that raises the 413/408 ``ApiError`` instead of returning a body past the limits. Once
        the body is complete, later calls (waiting for a disconnect) pass through untimed."""
        declared = header(scope["headers"], b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            raise errors.payload_too_large(self.max_bytes)
        loop = asyncio.get_running_loop()
        read = _Read(loop.time() + self.timeout)
        received = 0
        complete = False

        async def guarded() -> dict[str, Any]:
            nonlocal received, complete
            if complete:
                message: dict[str, Any] = await receive()
                return message
            if loop.time() >= read.deadline:
                raise self._timed_out()
            if read.task is None:
                read.task = asyncio.current_task()
            self._watch(loop, read)
            try:
                message = await receive()
            except asyncio.CancelledError:
                if not read.expired or read.task is None:
                    raise
                read.task.uncancel()
                raise self._timed_out() from None
            finally:
                self._waiting.discard(read)
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise errors.payload_too_large(self.max_bytes)
                complete = not message.get("more_body", False)
            else:
                complete = True
            return message

        return guarded

    def _timed_out(self) -> errors.ApiError:
        return errors.request_timeout(f"Request body not received within {self.timeout:g} s (--body-timeout-ms)")

    def _watch(self, loop: asyncio.AbstractEventLoop, read: _Read) -> None:
        self._waiting.add(read)
        if self._sweep is None or self._sweep_loop is not loop:
            self._sweep_loop = loop
            self._sweep = loop.call_later(SWEEP_INTERVAL, self._expire, loop)

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sweep = None
        now = loop.time()
        for read in [r for r in self._waiting if r.deadline <= now]:
            self._waiting.discard(read)
            read.expired = True
            if read.task is not None:
                read.task.cancel()
        if self._waiting:
            self._sweep = loop.call_later(SWEEP_INTERVAL, self._expire, loop)

    async def read(self, scope: dict[str, Any], receive: Receive) -> bytes:
        """The whole body (the read cache keys lookups by it)."""
        if body_arrived(receive):
            message = await receive()  # the whole body, without waiting
            body: bytes = message.get("body", b"")
            if len(body) > self.max_bytes:
                raise errors.payload_too_large(self.max_bytes)
            return body
        return await read_body(self.guard(scope, receive))


async def read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)
