"""The read cache's contract with the app behind it and with a security guard in front of hits.

Driven through the ASGI interface with a small app that counts what reaches it and marks its tickets as a
route would (the registry's own routes are exercised against the live server by the API tests)."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from registry.http.read_cache import SHARED, TICKET, ReadCache, ReadTicket


@dataclass
class Generation:
    generation: int = 0


@dataclass
class App:
    """Answers ``<path> #<calls> for <caller>``; marks the ticket unless the path says ``nocache``."""

    calls: int = 0
    bodies: list[bytes] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.calls += 1
        message = await receive()
        self.bodies.append(message.get("body", b""))
        path = scope["path"]
        caller = dict(scope["headers"]).get(b"x-user", b"anyone").decode()
        ticket: ReadTicket | None = scope.get(TICKET)  # absent where the cache never keeps answers (writes)
        if ticket is not None:
            ticket.cacheable = "nocache" not in path
            ticket.access = ("read", path)
            if path.startswith("/listing"):  # an answer filtered for the caller
                ticket.partition = caller
        status = 404 if "missing" in path else 200
        body = f"{path} #{self.calls} for {caller}".encode()
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": body})


@dataclass
class Guard:
    """Admits users in ``allowed``; answers per-caller tickets from the caller's partition."""

    allowed: set[str]
    seen: list[Any] = field(default_factory=list)

    async def admit(self, scope: dict[str, Any], ticket: ReadTicket) -> Hashable | None:
        user = dict(scope["headers"]).get(b"x-user", b"").decode()
        self.seen.append(ticket.access)
        if user not in self.allowed:
            return None
        return SHARED if ticket.partition == SHARED else user


def call(
    cache: ReadCache, path: str, *, method: str = "GET", body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, dict[bytes, bytes], bytes]:
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
    }
    sent: list[dict[str, Any]] = []
    incoming = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(cache(scope, receive, send))
    return sent[0]["status"], dict(sent[0]["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


def test_hits_skip_the_app_until_the_state_changes() -> None:
    app, state = App(), Generation()
    cache = ReadCache(app, state)
    assert call(cache, "/a") == (200, {}, b"/a #1 for anyone")
    status, headers, body = call(cache, "/a", headers={"Accept": "application/json"})
    assert (status, headers[b"content-type"], body, app.calls) == (200, b"application/json", b"/a #1 for anyone", 1)
    assert call(cache, "/a", headers={"Accept": "text/html"})[2] == b"/a #2 for anyone"  # the app answers (406)
    assert call(cache, "/nocache")[2] == b"/nocache #3 for anyone"
    assert call(cache, "/nocache")[2] == b"/nocache #4 for anyone"  # unmarked: never kept
    assert call(cache, "/missing")[0] == 404 and call(cache, "/missing")[2] == b"/missing #6 for anyone"
    state.generation += 1  # a record was applied
    assert call(cache, "/a")[2] == b"/a #7 for anyone"
    assert call(cache, "/a")[2] == b"/a #7 for anyone"


def test_post_bodies_are_part_of_the_key_and_reach_the_app() -> None:
    app = App()
    cache = ReadCache(app, Generation())
    assert call(cache, "/lookup", method="POST", body=b'{"schema":"1"}')[2] == b"/lookup #1 for anyone"
    assert call(cache, "/lookup", method="POST", body=b'{"schema":"2"}')[2] == b"/lookup #2 for anyone"
    assert call(cache, "/lookup", method="POST", body=b'{"schema":"1"}')[2] == b"/lookup #1 for anyone"
    plain = {"Content-Type": "text/plain"}  # a body type the registry does not take: the app answers (415)
    assert call(cache, "/lookup", method="POST", body=b'{"schema":"1"}', headers=plain)[2] == b"/lookup #3 for anyone"
    assert call(cache, "/x", method="PUT", body=b"{}")[2] == b"/x #4 for anyone"  # writes pass through
    assert call(cache, "/x", method="PUT", body=b"{}")[2] == b"/x #5 for anyone"
    assert app.bodies == [b'{"schema":"1"}', b'{"schema":"2"}', b'{"schema":"1"}', b"{}", b"{}"]


def test_a_guard_decides_every_hit_and_partitions_per_caller_answers() -> None:
    app, guard = App(), Guard({"alice", "bob"})
    cache = ReadCache(app, Generation(), guard=guard)
    alice, bob, eve = ({"X-User": u} for u in ("alice", "bob", "eve"))
    assert call(cache, "/schema", headers=alice)[2] == b"/schema #1 for alice"
    assert call(cache, "/schema", headers=bob)[2] == b"/schema #1 for alice"  # shared answer, bob admitted
    assert guard.seen == [("read", "/schema")]  # the guard checked what the answer requires
    assert call(cache, "/schema", headers=eve)[2] == b"/schema #2 for eve"  # refused: the app answers (401/403)
    assert call(cache, "/listing", headers=alice)[2] == b"/listing #3 for alice"
    assert call(cache, "/listing", headers=bob)[2] == b"/listing #4 for bob"  # not alice's filtered answer
    assert call(cache, "/listing", headers=alice)[2] == b"/listing #3 for alice"
    assert call(cache, "/listing", headers=bob)[2] == b"/listing #4 for bob"
    assert app.calls == 4
