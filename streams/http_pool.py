"""A small asyncio HTTP/1.1 client for GET requests between query servers: a pool of keep-alive connections
per host. httpx's async pool degrades sharply with many requests in flight (a forwarded query waits on
the pool, not the network), and one hop here must cost well under a millisecond; the peer is always our
own query server, so GET with a ``Content-Length`` or chunked answer is all it must speak.

Each connection is an ``asyncio.Protocol`` that parses the answer as its bytes arrive and completes one
future: no stream reader, no task switch per header read. A forwarded lookup's CPU cost is what limits its
tail latency on a busy machine, so the per-request work here is kept to a minimum.
"""

from __future__ import annotations

import asyncio
from typing import cast
from urllib.parse import urlencode, urlsplit

__all__ = ["HttpPool", "HttpPoolError"]

_MAX_HEADER = 64 * 1024


class HttpPoolError(Exception):
    """The peer could not be reached, closed the connection, answered garbage, or took too long."""


class _Connection(asyncio.Protocol):
    """One keep-alive connection, one request at a time: ``request`` sends it and waits for the whole answer."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._buf = bytearray()
        self._waiter: asyncio.Future[tuple[int, bytes, bool]] | None = None
        self._head: tuple[int, int, int, bool] | None = None  # status, body start, length (-1 chunked), keep

    # -- asyncio.Protocol -------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():  # bytes nobody asked for: the connection is unusable
            self.close()
            return
        self._buf += data
        try:
            answer = self._parse()
        except ValueError as exc:
            self._fail(exc)
            self.close()
            return
        if answer is not None:
            self._buf.clear()
            self._head = None
            self._waiter.set_result(answer)

    def eof_received(self) -> bool:
        head = self._head
        if head is not None and head[2] == -2 and self._waiter is not None and not self._waiter.done():
            # An answer without a length ends with the connection.
            self._waiter.set_result((head[0], bytes(self._buf[head[1] :]), False))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(exc if isinstance(exc, OSError) else ConnectionResetError("the peer closed the connection"))

    # -- use --------------------------------------------------------------------------------------------

    async def request(self, head: bytes) -> tuple[int, bytes, bool]:
        """Send ``head`` (a whole GET request); (status, body, whether the connection may be reused)."""
        assert self.transport is not None
        if self.closed:
            raise ConnectionResetError("the peer closed the connection")
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(head)
        return await waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    # -- parsing ----------------------------------------------------------------------------------------

    def _fail(self, exc: Exception) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)

    def _parse(self) -> tuple[int, bytes, bool] | None:
        """The complete answer in the buffer, or None while more is to come; ValueError on garbage."""
        buf = self._buf
        head = self._head
        if head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > _MAX_HEADER:
                    raise ValueError(f"an answer header longer than {_MAX_HEADER} bytes")
                return None
            head = self._head = self._parse_head(bytes(buf[:end]), end + 4)
        status, start, length, keep = head
        if length >= 0:
            if len(buf) - start < length:
                return None
            return status, bytes(buf[start : start + length]), keep
        if length == -2:
            return None  # until the connection closes (eof_received)
        return self._chunked(status, start, keep)

    @staticmethod
    def _parse_head(raw: bytes, start: int) -> tuple[int, int, int, bool]:
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length, keep = -2, True
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                continue
            name, value = name.strip().lower(), value.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and value == "chunked":
                length = -1
            elif name == "connection" and value == "close":
                keep = False
        return status, start, length, keep and length != -2

    def _chunked(self, status: int, start: int, keep: bool) -> tuple[int, bytes, bool] | None:
        buf = self._buf
        chunks: list[bytes] = []
        pos = start
        while True:
            line_end = buf.find(b"\r\n", pos)
            if line_end < 0:
                return None
            size = int(bytes(buf[pos:line_end]).split(b";")[0], 16)
            if len(buf) < line_end + 2 + size + 2:
                return None
            if size == 0:
                return status, b"".join(chunks), keep
            chunks.append(bytes(buf[line_end + 2 : line_end + 2 + size]))
            pos = line_end + 2 + size + 2


class HttpPool:
    """GETs to any ``http://host:port`` with at most ``max_per_host`` connections each, kept open between
    requests; ``timeout`` bounds connecting plus one exchange."""

    def __init__(self, timeout: float = 2.0, max_per_host: int = 32) -> None:
        self._timeout = timeout
        self._max = max_per_host
        self._hosts: dict[str, tuple[tuple[str, int], bytes]] = {}  # base URL -> (host, port), Host header
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._slots: dict[tuple[str, int], asyncio.Semaphore] = {}

    def _host(self, base_url: str) -> tuple[tuple[str, int], bytes]:
        known = self._hosts.get(base_url)
        if known is None:
            parts = urlsplit(base_url)
            if parts.scheme != "http" or not parts.hostname or parts.port is None:
                raise HttpPoolError(f"cannot reach {base_url!r}: only http://host:port")
            where = (parts.hostname, parts.port)
            known = self._hosts[base_url] = (where, f" HTTP/1.1\r\nHost: {where[0]}:{where[1]}\r\n\r\n".encode())
        return known

    async def get(self, base_url: str, path: str, params: dict[str, str] | None = None) -> tuple[int, bytes]:
        where, tail = self._host(base_url)
        target = f"{path}?{urlencode(params)}" if params else path
        head = b"GET " + target.encode() + tail
        slots = self._slots.get(where)
        if slots is None:
            slots = self._slots[where] = asyncio.Semaphore(self._max)
        try:
            async with asyncio.timeout(self._timeout), slots:
                return await self._exchange(where, head)
        except TimeoutError:
            raise HttpPoolError(f"{base_url} did not answer within {self._timeout}s") from None
        except (OSError, ValueError) as exc:
            raise HttpPoolError(f"{base_url}: {type(exc).__name__}: {exc}") from None

    async def _exchange(self, where: tuple[str, int], head: bytes) -> tuple[int, bytes]:
        idle = self._idle.setdefault(where, [])
        while idle and idle[-1].closed:  # closed by the peer while idle
            idle.pop()
        reused = bool(idle)
        conn = idle.pop() if idle else await self._connect(where)
        try:
            status, body, keep = await conn.request(head)
        except OSError:
            conn.close()
            if not reused:
                raise
            # A kept-alive connection the peer closed meanwhile: once more on a new one (GET is idempotent).
            conn = await self._connect(where)
            try:
                status, body, keep = await conn.request(head)
            except BaseException:
                conn.close()
                raise
        except BaseException:
            conn.close()
            raise
        if keep and not conn.closed:
            idle.append(conn)
        else:
            conn.close()
        return status, body

    @staticmethod
    async def _connect(where: tuple[str, int]) -> _Connection:
        _, conn = await asyncio.get_running_loop().create_connection(_Connection, *where)
        return conn

    async def aclose(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()
