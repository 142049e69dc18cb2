"""The read cache: a pure ASGI layer in front of the FastAPI app, so repeated reads never enter the framework.

Reads are answered from state in memory, and an answer is a pure function of the request and the state. So
the body of a 200 to a cacheable read (every GET of the API, and the lookup ``POST /subjects/{s}``) is kept
until the state changes: every applied record bumps ``State.generation`` and the cache empties. A hit is one
dict lookup, the ``Accept`` negotiation (``content.py``, shared with the routes) and one ``send``.

The key holds nothing a client can grow at will: the method, the raw path, the query parameters some route
reads (``query_names``; others cannot change the answer, so ``?junk=<random>`` shares the entry of the
request without it) and the body itself (within ``--max-request-bytes``; hashing it for the dict costs less
than a digest, and a hit compares the whole body, so colliding hashes can only share a slot, never an answer).
The cache is bounded by the bytes of its keys and answers (``max_bytes``); the oldest entries go first.

Bodies of other requests than GETs are read through ``BodyLimits`` (``body.py``): a body past its size or
time limit is answered 413/408 here (the lookup, whose body this layer reads) or in the app.

How an answer gets in: on a miss the layer puts a ``ReadTicket`` in the ASGI scope (``TICKET``) and calls the
app. The route that serves the request marks the ticket ``cacheable`` (``RegistryRoute`` does so for the
cacheable routes); a 200 to a marked ticket, computed while the generation did not move, is stored with its
ticket. Anything else a hit cannot answer the same way goes to the app: an ``Accept`` the registry cannot
satisfy (the app answers 406), a POST body type it does not take (415), a partition not cached yet.

The security seam (authentication and authorization plug in here; nothing is checked by default):

- ``ReadGuard.admit(scope, ticket, authorization)`` runs before every hit is served, with the ticket the answer
  was stored with and the request's ``Authorization`` value (the last one, as the authenticator reads it;
  found in the same pass over the headers as ``Accept``). It returns the *partition* to serve from, or None
  to let the app answer the request in full (the caller is not authenticated, is denied, or the guard cannot
  decide cheaply): then the app's own dependencies run and give the 401/403, and nothing is served from the
  cache. It is on the hot path, and
  synchronous (it must decide without waiting): memoize credential checks and decisions there (per
  ``Authorization`` header value and ticket; tickets hash by identity and live as long as their entry).
- The partition says whom an answer is valid for: ``SHARED`` for answers that do not depend on the caller,
  the principal (any hashable) for those that do, e.g. ``GET /subjects`` listing only what the caller may
  read. The app decides it on the miss: its security dependencies set ``ticket.partition`` to the principal
  where the answer was filtered for it, and ``ticket.access`` to what the answer requires (opaque here, e.g.
  ``("read", "subject", "orders")``), which the guard checks on later hits. A guard therefore: finds the
  principal (memoized), checks ``ticket.access`` for it (None if denied), and answers ``SHARED`` when
  ``ticket.partition == SHARED``, else the principal.

Every HTTP request that passes is counted here (``registry/metrics.py``), hits included: a miss by the route
template the app matched and the status it answered; a hit in the series resolved when its answer was stored
(``_Entry.stats``), so a hit pays one ``perf_counter`` pair and two additions, never a label lookup.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Protocol
from urllib.parse import parse_qsl

from registry.errors import ApiError
from registry.http.body import BodyLimits, read_body
from registry.http.content import CT_V1, body_type_accepted, header, negotiate
from registry.http.errors import send_error
from registry.metrics import UNMATCHED, RequestMetrics, RouteStats

Scope = dict[str, Any]
#: the scope key under which the app finds the ticket of the request
TICKET = "schemakit.read_ticket"
#: the partition of answers that are the same for every caller
SHARED: Hashable = "*"
MAX_BYTES = 64 * 2**20  # of keys and answers
#: what an entry costs besides its key and answers (the dicts, the ticket), in bytes, about
ENTRY_OVERHEAD = 400
Key = tuple[str, bytes, Any, bytes]


@dataclass(slots=True, eq=False)  # hashed by identity: a guard may key its decisions by ticket
class ReadTicket:
    """Filled by the app while it answers a cache miss; stored with the answer."""

    cacheable: bool = False  # the route's 200s may be served again from the cache
    access: Hashable | None = None  # what serving this answer requires (for ``ReadGuard``)
    partition: Hashable = SHARED  # whom the answer was computed for


class ReadGuard(Protocol):
    """Decides, before a hit is served, whether and from which partition (see the module docstring)."""

    def admit(self, scope: Scope, ticket: ReadTicket, authorization: bytes | None) -> Hashable | None:
        """``authorization``: the request's last ``Authorization`` value (None: none), found by the cache's own
        pass over the headers, so a guard keyed by it need not scan them again."""
        ...


class GenerationSource(Protocol):
    """Anything that tells when the state changed (``State``)."""

    @property
    def generation(self) -> int: ...


@dataclass(slots=True)
class _Entry:
    ticket: ReadTicket
    stats: RouteStats  # the series a hit counts in
    size: int  # bytes of the key and every answer kept
    #: partition -> (content-length, answer body)
    bodies: dict[Hashable, tuple[bytes, bytes]] = field(default_factory=dict)


class ReadCache:
    """ASGI middleware: ``ReadCache(app, state, guard=None, requests=None, max_bytes=..., query_names=None,
    bodies=None)``; ``requests`` counts every request.

    ``query_names`` are the query parameters that can change an answer (None: the whole query string is
    part of the key); ``bodies`` the limits request bodies are read within (None: none)."""

    def __init__(
        self,
        app: Any,
        state: GenerationSource,
        *,
        guard: ReadGuard | None = None,
        requests: RequestMetrics | None = None,
        max_bytes: int = MAX_BYTES,
        query_names: frozenset[str] | None = None,
        bodies: BodyLimits | None = None,
    ) -> None:
        self.app = app
        self.state = state
        self.guard = guard
        self.requests = requests if requests is not None else RequestMetrics()
        self.max_bytes = max_bytes
        self.query_names = query_names
        self.bodies = bodies
        self.bytes = 0
        self._entries: dict[Key, _Entry] = {}
        self._generation = -1

    def __len__(self) -> int:
        return len(self._entries)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = perf_counter()
        method = scope["method"]
        if method != "GET" and method != "POST":
            await self._counted(scope, receive, send, start)
            return
        generation = self.state.generation
        if generation != self._generation:
            self._entries.clear()
            self.bytes = 0
            self._generation = generation
        headers = scope["headers"]
        body = b""
        if method == "POST":
            try:
                body = await (read_body(receive) if self.bodies is None else self.bodies.read(scope, receive))
            except ApiError as e:
                await send_error(send, e)
                return
        query = scope.get("query_string", b"")
        key = (
            method,
            scope.get("raw_path") or scope["path"].encode(),
            self._query_key(query) if query else b"",
            body,
        )
        entry = self._entries.get(key)
        if entry is not None:
            # the headers a hit reads, each as the app reads it: the first ``Accept`` (Starlette's) and, for the
            # guard, the last ``Authorization`` (the authenticator's); one inline pass (a call to ``header`` per
            # name costs more than the scan)
            guard = self.guard
            accept = authorization = None
            if guard is None:
                for name, value in headers:
                    if name == b"accept":
                        accept = value
                        break
            else:
                for name, value in headers:
                    if name == b"authorization":
                        authorization = value
                    elif name == b"accept" and accept is None:
                        accept = value
            media = CT_V1 if accept is None else negotiate(accept)
            if media is not None and (method == "GET" or _body_type_accepted(header(headers, b"content-type"))):
                partition = SHARED if guard is None else guard.admit(scope, entry.ticket, authorization)
                hit = entry.bodies.get(partition) if partition is not None else None
                if hit is not None:
                    await send(
                        {
                            "type": "http.response.start",
                            "status": 200,
                            "headers": [(b"content-type", media), (b"content-length", hit[0])],
                        }
                    )
                    await send({"type": "http.response.body", "body": hit[1]})
                    entry.stats.observe(perf_counter() - start)
                    return
        receive = _replay(body, receive) if method == "POST" else receive
        await self._miss(scope, receive, send, key, generation, start)

    async def _counted(self, scope: Scope, receive: Any, send: Any, start: float) -> None:
        """A request the cache does not take (PUT, DELETE, ...), counted."""
        status = 500  # what the client gets if the app fails before answering

        async def capture(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            if self.bodies is not None:  # a write's body is read by the app, within the limits
                try:
                    receive = self.bodies.guard(scope, receive)
                except ApiError as e:  # refused from its Content-Length
                    await send_error(capture, e)
                    return
            await self.app(scope, receive, capture)
        finally:
            self.requests.stats(scope["method"], _route(scope), status).observe(perf_counter() - start)

    def _query_key(self, query: bytes) -> Any:
        """The query parameters routes read, decoded as the app decodes them (so ``%64eleted`` is
        ``deleted``), in order; the others are dropped."""
        if self.query_names is None:
            return query
        names = self.query_names
        return tuple(p for p in parse_qsl(query.decode("latin-1"), keep_blank_values=True) if p[0] in names) or b""

    async def _miss(self, scope: Scope, receive: Any, send: Any, key: Key, generation: int, start: float) -> None:
        ticket = ReadTicket()
        scope[TICKET] = ticket
        status = 500  # what the client gets if the app fails before answering
        chunks: list[bytes] = []

        async def capture(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif status == 200 and ticket.cacheable:
                chunks.append(message.get("body", b""))
            await send(message)

        method = key[0]
        try:
            await self.app(scope, receive, capture)
        finally:
            self.requests.stats(method, _route(scope), status).observe(perf_counter() - start)
        if ticket.cacheable:
            self.requests.cache_misses += 1
        # Only keep what was computed from the state the request saw: a route that awaited may have seen a newer
        # state (then the generation moved and the answer is not kept).
        if status != 200 or not ticket.cacheable or self.state.generation != generation:
            return
        body = b"".join(chunks)
        size = len(body) + ENTRY_OVERHEAD
        entry = self._entries.get(key)
        if entry is None:
            size += _key_size(key)
            stats = self.requests.stats(method, _route(scope), 200, cached=True)
            entry = self._entries[key] = _Entry(ticket, stats, 0)
        elif ticket.partition in entry.bodies:
            return
        entry.bodies[ticket.partition] = (str(len(body)).encode(), body)
        entry.size += size
        self.bytes += size
        while self.bytes > self.max_bytes and self._entries:  # the oldest entries make room
            oldest = next(iter(self._entries))
            self.bytes -= self._entries.pop(oldest).size


#: ``content.body_type_accepted``, remembered per value (a lookup hit checks it; clients send a handful of values)
_body_type_accepted = functools.lru_cache(maxsize=1024)(body_type_accepted)


def _key_size(key: Key) -> int:
    query = key[2]
    query_size = len(query) if isinstance(query, bytes) else sum(len(n) + len(v) for n, v in query)
    return len(key[1]) + query_size + len(key[3])


def _route(scope: Scope) -> str:
    """The route template the app matched (Starlette leaves the route in the scope), else ``UNMATCHED``."""
    path = getattr(scope.get("route"), "path", None)
    return path if isinstance(path, str) else UNMATCHED


def _replay(body: bytes, receive: Any) -> Any:
    """A ``receive`` that gives the app the body already read, then whatever the server sends next."""
    pending = True

    async def replay() -> dict[str, Any]:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        message: dict[str, Any] = await receive()
        return message

    return replay
