"""The query servers' forwarding pool against a real socket server: kept-alive reuse, a connection the peer
closed meanwhile (retried once on a new one), chunked bodies, answers arriving in pieces, connections not to
reuse, a timeout, and an unreachable peer as ``HttpPoolError``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from streams.http_pool import HttpPool, HttpPoolError
from tests.support.ports import free_port

#: Answers one request (its target) on ``writer``; False closes the connection after it.
Respond = Callable[[bytes, asyncio.StreamWriter], Awaitable[bool]]


async def _serve(respond: Respond) -> tuple[asyncio.Server, list[str], list[int]]:
    """A server that answers each request with ``respond``; records request lines and connections."""
    requests: list[str] = []
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            requests.append(head.split(b"\r\n")[0].decode())
            if not await respond(head.split(b" ")[1], writer):
                break
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, requests, connections


def _in_turn(answers: list[bytes], close_after_each: bool) -> Respond:
    """Each request answered with the next of ``answers``."""
    left = list(answers)

    async def respond(_: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(left.pop(0))
        await writer.drain()
        return not close_after_each  # closing: an idle timeout on the peer's side, without saying so

    return respond


def test_keep_alive_reuse_stale_connection_and_chunked() -> None:
    async def scenario() -> None:
        plain = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
        chunked = b"HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
        server, requests, connections = await _serve(_in_turn([plain, plain, chunked], close_after_each=False))
        port = server.sockets[0].getsockname()[1]
        pool = HttpPool(timeout=2)
        assert await pool.get(f"http://127.0.0.1:{port}", "/a", {"x": "1 2"}) == (200, b"ok")
        assert await pool.get(f"http://127.0.0.1:{port}", "/b") == (200, b"ok")
        assert await pool.get(f"http://127.0.0.1:{port}", "/c") == (404, b"abcde")
        assert requests == ["GET /a?x=1+2 HTTP/1.1", "GET /b HTTP/1.1", "GET /c HTTP/1.1"]
        assert len(connections) == 1  # one connection, kept alive
        await pool.aclose()
        server.close()

        server, requests, connections = await _serve(_in_turn([plain, plain], close_after_each=True))
        port = server.sockets[0].getsockname()[1]
        pool = HttpPool(timeout=2)
        assert await pool.get(f"http://127.0.0.1:{port}", "/a") == (200, b"ok")
        await asyncio.sleep(0.05)  # the server has closed the kept-alive connection by now
        assert await pool.get(f"http://127.0.0.1:{port}", "/b") == (200, b"ok")
        assert requests == ["GET /a HTTP/1.1", "GET /b HTTP/1.1"] and len(connections) == 2
        await pool.aclose()
        server.close()

        with pytest.raises(HttpPoolError, match=r"http://127.0.0.1:\d+: ConnectionRefusedError"):
            await pool.get(f"http://127.0.0.1:{free_port()}", "/a")

    asyncio.run(scenario())


def test_answers_in_pieces_connection_close_and_timeout() -> None:
    """An answer whose head and body arrive in separate segments is put together; ``connection: close`` and an
    answer without a length (read to the end) are not reused; a peer that never answers times out."""

    async def scenario() -> None:
        async def respond(target: bytes, writer: asyncio.StreamWriter) -> bool:
            if target == b"/pieces":
                for piece in (b"HTTP/1.1 200 OK\r\ncontent-", b"length: 5\r\n\r", b"\nhel", b"lo"):
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.01)
            elif target == b"/close":
                writer.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 3\r\n\r\nbye")
            elif target == b"/unsized":
                writer.write(b"HTTP/1.1 200 OK\r\n\r\nto the end")
                await writer.drain()
                return False
            return True  # /silent: never answered

        server, _, connections = await _serve(respond)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        pool = HttpPool(timeout=0.5)
        assert await pool.get(url, "/pieces") == (200, b"hello")
        assert await pool.get(url, "/pieces") == (200, b"hello")
        assert len(connections) == 1
        assert await pool.get(url, "/close") == (200, b"bye")
        assert await pool.get(url, "/unsized") == (200, b"to the end")
        assert await pool.get(url, "/pieces") == (200, b"hello")
        assert len(connections) == 3  # neither the closed nor the read-to-the-end connection was reused
        with pytest.raises(HttpPoolError, match=r"did not answer within 0.5s"):
            await pool.get(url, "/silent")
        assert await pool.get(url, "/pieces") == (200, b"hello")  # the timed-out connection was dropped
        assert len(connections) == 4
        await pool.aclose()
        server.close()

    asyncio.run(scenario())
