"""The read cache's contract with the app behind it and with a security guard in front of hits.

Driven through the ASGI interface with a small app that counts what reaches it and marks its tickets as a
route would (the registry's own routes are exercised against the live server by the API tests)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import pytest

from registry.errors import ApiError
from registry.http.body import BodyLimits
from registry.http.read_cache import ENTRY_OVERHEAD, SHARED, TICKET, ReadCache, ReadTicket


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
    authorizations: list[bytes | None] = field(default_factory=list)  # as the cache handed them over

    def admit(self, scope: dict[str, Any], ticket: ReadTicket, authorization: bytes | None) -> Hashable | None:
        user = dict(scope["headers"]).get(b"x-user", b"").decode()
        self.seen.append(ticket.access)
        self.authorizations.append(authorization)
        if user not in self.allowed:
            return None
        return SHARED if ticket.partition == SHARED else user


def call(
    cache: ReadCache,
    path: str,
    *,
    method: str = "GET",
    body: bytes = b"",
    chunks: list[bytes] | None = None,
    delay: float = 0.0,
    headers: dict[str, str] | list[tuple[str, str]] | None = None,
) -> tuple[int, dict[bytes, bytes], bytes]:
    """``path`` may carry a query string; ``chunks`` send the body in parts, each after ``delay`` seconds;
    ``headers`` as pairs may repeat a name."""
    path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "headers": [
            (k.lower().encode(), v.encode())
            for k, v in (headers.items() if isinstance(headers, dict) else headers or [])
        ],
    }
    sent: list[dict[str, Any]] = []
    parts = chunks if chunks is not None else [body]
    incoming = [{"type": "http.request", "body": b, "more_body": i < len(parts) - 1} for i, b in enumerate(parts)]

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(delay)
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


def test_a_guard_is_handed_the_authorization_the_authenticator_reads() -> None:
    """A hit reads each header as the app would: the first ``Accept`` (Starlette's) and, handed to the guard, the
    last ``Authorization`` (the authenticator's), both from the one pass over the headers."""
    app, guard = App(), Guard({"alice"})
    cache = ReadCache(app, Generation(), guard=guard)
    assert call(cache, "/schema", headers={"X-User": "alice"})[2] == b"/schema #1 for alice"
    repeated = [
        ("Authorization", "Basic first"),
        ("Accept", "application/json"),
        ("X-User", "alice"),
        ("Accept", "text/html"),  # not one the registry produces: a hit reading it would be refused (406)
        ("Authorization", "Basic last"),
    ]
    status, headers, body = call(cache, "/schema", headers=repeated)
    assert (status, headers[b"content-type"], body) == (200, b"application/json", b"/schema #1 for alice")
    assert call(cache, "/schema", headers={"X-User": "alice"})[2] == b"/schema #1 for alice"
    assert guard.authorizations == [b"Basic last", None]


def test_only_parameters_a_route_reads_are_part_of_the_key() -> None:
    app = App()
    cache = ReadCache(app, Generation(), query_names=frozenset({"deleted", "key"}))
    assert call(cache, "/a?junk=1")[2] == b"/a #1 for anyone"
    for junk in ("/a?junk=2", "/a?junk=3&other=x", "/a"):
        assert call(cache, junk)[2] == b"/a #1 for anyone"  # the same answer: no new entry
    assert call(cache, "/a?deleted=true&junk=4")[2] == b"/a #2 for anyone"
    assert call(cache, "/a?%64eleted=true")[2] == b"/a #2 for anyone"  # decoded as the app decodes it
    assert call(cache, "/a?key=k1&key=k2")[2] == b"/a #3 for anyone"
    assert call(cache, "/a?key=k2&key=k1")[2] == b"/a #4 for anyone"  # repeated parameters keep their order
    assert (len(cache), app.calls) == (4, 4)


def test_cache_is_bounded_by_bytes_and_drops_the_oldest() -> None:
    app = App()
    answer = len(b"/p0 #1 for anyone")
    entry = answer + ENTRY_OVERHEAD + len("/p0")
    cache = ReadCache(app, Generation(), max_bytes=3 * entry)
    for i in range(5):
        call(cache, f"/p{i}")
    assert (len(cache), cache.bytes) == (3, 3 * entry)
    assert call(cache, "/p4")[2] == b"/p4 #5 for anyone"  # kept
    assert call(cache, "/p0")[2] == b"/p0 #6 for anyone"  # dropped, answered again


def test_a_lookup_is_keyed_by_its_whole_body_and_counted_in_the_bytes() -> None:
    app = App()
    cache = ReadCache(app, Generation())
    body = b'{"schema": "' + b"x" * 100_000 + b'"}'
    assert call(cache, "/lookup", method="POST", body=body)[2] == b"/lookup #1 for anyone"
    assert call(cache, "/lookup", method="POST", body=body)[2] == b"/lookup #1 for anyone"
    other = body[:-3] + b'y"}'  # same length, one byte apart: another entry
    assert call(cache, "/lookup", method="POST", body=other)[2] == b"/lookup #2 for anyone"
    first, second = cache._entries
    assert (first[3], second[3]) == (body, other)
    answers = len(b"/lookup #1 for anyone") + len(b"/lookup #2 for anyone")
    assert cache.bytes == 2 * (len(body) + len("/lookup") + ENTRY_OVERHEAD) + answers  # the bodies count


def test_bodies_past_the_limits_are_refused_while_they_arrive() -> None:
    app = App()
    cache = ReadCache(app, Generation(), bodies=BodyLimits(100, 0.2))
    status, headers, body = call(cache, "/lookup", method="POST", chunks=[b"x" * 60, b"x" * 60, b"x" * 1000])
    assert (status, headers[b"connection"], app.calls) == (413, b"close", 0)
    assert json.loads(body) == {
        "error_code": 413,
        "message": "Request body is larger than the limit of 100 bytes (--max-request-bytes)",
    }
    declared = {"Content-Length": "5000"}  # refused before a byte of the body is read
    assert call(cache, "/lookup", method="POST", headers=declared)[0] == 413
    assert call(cache, "/x", method="PUT", headers=declared)[0] == 413
    status, _, body = call(cache, "/lookup", method="POST", chunks=[b"x", b"x", b"x"], delay=0.1)
    assert (status, json.loads(body)["error_code"], app.calls) == (408, 408, 0)
    with pytest.raises(ApiError) as error:  # a write's body is read by the app: the limit is raised there
        call(cache, "/x", method="PUT", body=b"x" * 150)
    assert error.value.status == 413
    assert call(cache, "/x", method="PUT", body=b"x" * 100)[2] == b"/x #2 for anyone"  # within the limit
