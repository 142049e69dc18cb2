"""Request bodies read within the registry's limits: at most ``max_bytes`` (else 413), sent within ``timeout``
seconds (else 408), both checked while the body arrives, chunk by chunk, so a chunked upload without a
``Content-Length`` is stopped as soon as it passes the limit and a client that trickles its body is cut off.

Both answers carry ``Connection: close``: the rest of the body is never read, so the connection cannot
carry another request.
"""

from __future__ import annotations

import asyncio
from typing import Any

from registry import errors
from registry.http.content import header

Receive = Any


class BodyLimits:
    def __init__(self, max_bytes: int, timeout: float) -> None:
        self.max_bytes = max_bytes
        self.timeout = timeout

    def guard(self, scope: dict[str, Any], receive: Receive) -> Receive:
        """A ``receive`` that raises the 413/408 ``ApiError`` instead of returning a body past the limits. Once
        the body is complete, later calls (waiting for a disconnect) pass through untimed."""
        declared = header(scope["headers"], b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            raise errors.payload_too_large(self.max_bytes)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        received = 0
        complete = False

        async def guarded() -> dict[str, Any]:
            nonlocal received, complete
            if complete:
                message: dict[str, Any] = await receive()
                return message
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.0))
            except TimeoutError:
                raise errors.request_timeout(
                    f"Request body not received within {self.timeout:g} s (--body-timeout-ms)"
                ) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise errors.payload_too_large(self.max_bytes)
                complete = not message.get("more_body", False)
            else:
                complete = True
            return message

        return guarded

    async def read(self, scope: dict[str, Any], receive: Receive) -> bytes:
        """The whole body (the read cache keys lookups by it)."""
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
