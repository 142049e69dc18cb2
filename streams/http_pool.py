"""A small asyncio HTTP/1.1 client for GET requests between query servers: a pool of keep-alive connections
per host. httpx's async pool degrades sharply with many requests in flight (a forwarded query waits on
the pool, not the network), and one hop here must cost well under a millisecond; the peer is always our
own query server, so GET with a ``Content-Length`` or chunked answer is all it must speak.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode, urlsplit

__all__ = ["HttpPool", "HttpPoolError"]

_MAX_HEADER = 64 * 1024


class HttpPoolError(Exception):
    """The peer could not be reached, closed the connection, answered garbage, or took too long."""


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def close(self) -> None:
        self.writer.close()


class HttpPool:
    """GETs to any ``http://host:port`` with at most ``max_per_host`` connections each, kept open between
    requests; ``timeout`` bounds connecting plus one exchange."""

    def __init__(self, timeout: float = 2.0, max_per_host: int = 32) -> None:
        self._timeout = timeout
        self._max = max_per_host
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._slots: dict[tuple[str, int], asyncio.Semaphore] = {}

    async def get(self, base_url: str, path: str, params: dict[str, str] | None = None) -> tuple[int, bytes]:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname or parts.port is None:
            raise HttpPoolError(f"cannot reach {base_url!r}: only http://host:port")
        where = (parts.hostname, parts.port)
        target = f"{path}?{urlencode(params)}" if params else path
        slots = self._slots.setdefault(where, asyncio.Semaphore(self._max))
        try:
            async with asyncio.timeout(self._timeout), slots:
                return await self._exchange(where, target)
        except TimeoutError:
            raise HttpPoolError(f"{base_url} did not answer within {self._timeout}s") from None
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            raise HttpPoolError(f"{base_url}: {type(exc).__name__}: {exc}") from None

    async def _exchange(self, where: tuple[str, int], target: str) -> tuple[int, bytes]:
        idle = self._idle.setdefault(where, [])
        reused = bool(idle)
        conn = idle.pop() if idle else await self._connect(where)
        try:
            status, body, keep = await self._request(conn, where, target)
        except (OSError, asyncio.IncompleteReadError):
            conn.close()
            if not reused:
                raise
            # A kept-alive connection the peer closed meanwhile: once more on a new one (GET is idempotent).
            conn = await self._connect(where)
            try:
                status, body, keep = await self._request(conn, where, target)
            except BaseException:
                conn.close()
                raise
        except BaseException:
            conn.close()
            raise
        if keep:
            idle.append(conn)
        else:
            conn.close()
        return status, body

    async def _connect(self, where: tuple[str, int]) -> _Connection:
        reader, writer = await asyncio.open_connection(*where, limit=_MAX_HEADER)
        return _Connection(reader, writer)

    @staticmethod
    async def _request(conn: _Connection, where: tuple[str, int], target: str) -> tuple[int, bytes, bool]:
        conn.writer.write(f"GET {target} HTTP/1.1\r\nHost: {where[0]}:{where[1]}\r\n\r\n".encode())
        await conn.writer.drain()
        head = await conn.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            body = await conn.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await conn.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await conn.reader.readexactly(size + 2)
                if size == 0:
                    break
                chunks.append(chunk[:-2])
            body = b"".join(chunks)
        else:
            body = await conn.reader.read()
            return status, body, False
        return status, body, headers.get("connection", "").lower() != "close"

    async def aclose(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()
