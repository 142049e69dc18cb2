"""The interactive query server: HTTP on an instance's ``application_server`` (FastAPI on uvicorn, in its
own thread), answering for the whole application.

A key is routed to the instance whose active task holds its partition (``QueryMetadata``, from the newest
assignment); that instance answers from its local store (``?local=true`` marks such a forwarded request, which
is never forwarded again). ``range`` and ``all`` fan out: each partition of the store is asked of its owner,
all owners at once, and the answers are merged in key-byte order (a ``local=true`` answer carries each key's
bytes, base64, as ``kb``). With ``include_standby=true`` a partition
whose owner cannot answer (unreachable, restoring, or none during a hand-over) is answered by a standby,
possibly stale (``"stale": true``); without it such a query fails with 503 and ``Retry-After``, never with
a partial answer.

Window and session stores are asked per key, routed the same way: ``/v1/stores/{store}/keys/{key}/windows``
(``?from=&to=``: the key's windows starting in that range, Kafka Streams' ``fetch(key, from, to)``) and
``/v1/stores/{store}/keys/{key}/sessions`` (``?from=&to=``: sessions ending at or after ``from`` and starting
at or before ``to``, as ``findSessions``); times are epoch milliseconds or ISO-8601 (UTC unless it says).

``GET /v1/metadata`` describes every instance (its tasks, stores and changelog lags); ``GET /v1/tasks`` this
instance's state and tasks with their input and changelog lags (``streams/status.py``, read by ``schemakit
streams status``).

Errors are Confluent-style ``{"error_code", "message"}`` bodies: 40001 a bad query parameter, 40401 store not
found (or not of the kind the path asks for), 40402 key not found, 42201 a key the store's key serde cannot
take, 50301 not available now (``Retry-After`` in seconds), 50001 a value that could not be read or rendered.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol
from urllib.parse import quote, unquote, unquote_to_bytes, urlencode

import orjson
import uvicorn
from fastapi import FastAPI, Query, Request
from fastapi.responses import Response

from streams.config import parse_host_port
from streams.errors import InvalidStateStoreError, StreamsError
from streams.global_table import ReadOnlyGlobalStore
from streams.group_leader import Assignment
from streams.http_pool import HttpPool, HttpPoolError
from streams.key_lookup_protocol import KeyLookupProtocol
from streams.queries import (
    HostInfo,
    QueryMetadata,
    ReadOnlySessionStore,
    ReadOnlyStore,
    ReadOnlyVersionedStore,
    ReadOnlyWindowStore,
    View,
    retrying,
)
from streams.record_serdes import BytesSerde, FloatSerde, IntSerde, StringSerde
from streams.state.timed import MAX_TIME
from streams.status import instance_status

__all__ = ["QueryServer", "QuerySource", "parse_time", "to_json"]

log = logging.getLogger("streams.query_server")

INVALID_PARAMETER = 40001
STORE_NOT_FOUND = 40401
KEY_NOT_FOUND = 40402
INVALID_KEY = 42201
INTERNAL = 50001
NOT_AVAILABLE = 50301

_MILLISECOND = timedelta(milliseconds=1)


class QuerySource(Protocol):
    """What the server asks of the app (``StreamsApp`` implements it)."""

    application_id: str
    instance_id: str
    query_metadata: QueryMetadata

    def store(self, name: str, include_standby: bool = False) -> View: ...

    def assignment(self) -> Assignment: ...

    def task_lags(self) -> dict[str, dict[str, int]]: ...

    def input_lags(self) -> dict[str, int]: ...

    def metrics(self) -> dict[str, Any]: ...

    def metrics_exposition(self) -> tuple[bytes, str]:
        """The Prometheus text and its content type."""
        ...

    @property
    def retry_after_s(self) -> int:
        """How long a client should wait before a query whose owner is gone may succeed (the session timeout)."""
        ...


def _default(obj: Any) -> Any:
    if isinstance(obj, bytes):
        return base64.b64encode(obj).decode()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    dump = getattr(obj, "model_dump", None)  # pydantic models
    if callable(dump):
        return dump(mode="json")
    raise TypeError(f"cannot render a {type(obj).__name__} as JSON")


def to_json(obj: Any) -> bytes:
    """A typed value as JSON: dataclasses become objects, bytes base64, sets lists, pydantic models their dump."""
    return orjson.dumps(obj, default=_default, option=orjson.OPT_NON_STR_KEYS)


def parse_key(serde: Any, text: str) -> Any:
    """A key from its URL text, as the store's key serde takes it: str, int, float, UTF-8 bytes; JSON
    (the default serde) and others: the text as JSON if it parses (``"007"`` in quotes for a string that
    looks like a number), else the text itself."""
    if isinstance(serde, StringSerde):
        return text
    if isinstance(serde, IntSerde):
        return int(text)
    if isinstance(serde, FloatSerde):
        return float(text)
    if isinstance(serde, BytesSerde):
        return text.encode()
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def parse_time(text: str, name: str) -> int:
    """A time parameter as epoch milliseconds: an integer, or ISO-8601 (without an offset: UTC)."""
    try:
        ms = int(text)
    except ValueError:
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            raise QueryError(
                400,
                INVALID_PARAMETER,
                f"{name}={text!r} is neither epoch milliseconds nor an ISO-8601 time (e.g. 2024-05-01T12:00:00Z)",
            ) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        ms = (when - datetime(1970, 1, 1, tzinfo=UTC)) // _MILLISECOND
    if not 0 <= ms <= MAX_TIME:
        raise QueryError(400, INVALID_PARAMETER, f"{name}={text!r} is out of range: times are from the epoch (0) on")
    return ms


class QueryError(Exception):
    def __init__(self, status: int, code: int, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


def _json(body: Any, status: int = 200) -> Response:
    return Response(to_json(body), status_code=status, media_type="application/json")


def _error(raw: bytes) -> dict[str, Any]:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return body if isinstance(body, dict) else {}


def _message(raw: bytes) -> str:
    return str(_error(raw).get("message") or raw[:200].decode(errors="replace"))


def _error_code(raw: bytes) -> int:
    code = _error(raw).get("error_code")
    return code if isinstance(code, int) else NOT_AVAILABLE


_KINDS: dict[type, str] = {
    ReadOnlyStore: "key-value",
    ReadOnlyVersionedStore: "versioned key-value",
    ReadOnlyWindowStore: "window",
    ReadOnlySessionStore: "session",
    ReadOnlyGlobalStore: "global",
}
#: The views the HTTP API reads a partition of.
_Partitioned = ReadOnlyStore | ReadOnlyVersionedStore | ReadOnlyWindowStore | ReadOnlySessionStore


def _unavailable(source: QuerySource, message: str) -> QueryError:
    return QueryError(503, NOT_AVAILABLE, message, source.retry_after_s)


def _params(query_string: bytes) -> dict[bytes, bytes]:
    """The query parameters of a query string; the last one of a name counts."""
    if not query_string:
        return {}
    params = {}
    for part in query_string.split(b"&"):
        name, _, value = part.partition(b"=")
        params[unquote_to_bytes(name)] = unquote_to_bytes(value)
    return params


def _flag(params: dict[bytes, bytes], name: bytes) -> bool:
    """A boolean query parameter (``true``, ``1``, ``yes``)."""
    return params.get(name, b"").lower() in (b"true", b"1", b"yes")


class _KeyLookups:
    """The hot path in front of FastAPI: ``GET /v1/stores/{store}/keys/{key}`` never enters FastAPI's routing
    and parameter validation; everything else does. As ASGI it serves uvicorn's connections; ``match`` and
    ``answer`` also serve ``KeyLookupProtocol``'s, which skip uvicorn's request handling as well."""

    def __init__(self, server: QueryServer, app: FastAPI) -> None:
        self._server = server
        self._app = app

    @staticmethod
    def match(raw_path: bytes) -> tuple[str, str] | None:
        """(store, key) if ``raw_path`` (without the query) asks for a key of a store, else None."""
        parts = raw_path.split(b"/")
        if len(parts) == 6 and parts[1] == b"v1" and parts[2] == b"stores" and parts[4] == b"keys" and parts[5]:
            return unquote(parts[3].decode("utf-8", "replace")), unquote(parts[5].decode("utf-8", "replace"))
        return None

    async def answer(self, store: str, key: str, query_string: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Status, headers (without the length) and body of the lookup of ``key`` in ``store``; never raises."""
        params = _params(query_string)
        headers: list[tuple[bytes, bytes]] = [(b"content-type", b"application/json")]
        as_of = params.get(b"as_of")
        try:
            status, body = await self._server.key_lookup(
                store,
                key,
                _flag(params, b"include_standby"),
                _flag(params, b"local"),
                None if as_of is None else as_of.decode("utf-8", "replace"),
            )
        except QueryError as exc:
            status, body = exc.status, orjson.dumps({"error_code": exc.code, "message": exc.message})
            if exc.retry_after is not None:
                headers.append((b"retry-after", str(exc.retry_after).encode()))
        except Exception as exc:  # a value that does not deserialize or render: say which
            log.warning("query of key %r in store %r failed: %s", key, store, exc, exc_info=True)
            message = f"{type(exc).__name__}: {exc}"
            status, body = 500, orjson.dumps({"error_code": INTERNAL, "message": message})
        return status, headers, body

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            matched = self.match((scope.get("raw_path") or scope["path"].encode()).split(b"?", 1)[0])
            if matched is not None:
                status, headers, body = await self.answer(*matched, scope.get("query_string", b""))
                headers.append((b"content-length", str(len(body)).encode()))
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self._app(scope, receive, send)


class QueryServer:
    """Serves ``source`` on ``advertised`` (the ``application_server``), listening on ``bind`` (``host:port``;
    default: the advertised host and port). ``forward_timeout_s`` bounds a request to another instance."""

    def __init__(
        self, source: QuerySource, advertised: str, bind: str | None = None, forward_timeout_s: float = 2.0
    ) -> None:
        self.source = source
        self.advertised = advertised.rstrip("/")
        self.host, self.port = parse_host_port(bind or advertised)
        self._timeout = forward_timeout_s
        self._client: HttpPool | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.app = _KeyLookups(self, self._build())

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self, timeout: float = 15.0) -> None:
        # No proxy-headers middleware: nothing here reads the client's address, and it costs every request.
        config = uvicorn.Config(
            self.app,
            host=self.host,
            port=self.port,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=2,
            proxy_headers=False,
            http=self._http_protocol(),
        )
        server = self._server = uvicorn.Server(config)
        failure: list[BaseException] = []

        def run() -> None:
            try:
                server.run()
            except BaseException as exc:  # SystemExit on a port in use
                failure.append(exc)

        self._thread = threading.Thread(target=run, name=f"{self.source.application_id}-query-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise StreamsError(
                    f"the query server could not listen on {self.host}:{self.port} (application_server "
                    f"{self.advertised}): {failure[0] if failure else 'it did not start in time'}"
                )
            time.sleep(0.01)
        log.info(
            "query server of %s (instance %s) listening on %s:%d, advertised as %s",
            self.source.application_id,
            self.source.instance_id,
            self.host,
            self.port,
            self.advertised,
        )

    def _http_protocol(self) -> type[asyncio.Protocol] | Literal["auto"]:
        """Key lookups answered by ``KeyLookupProtocol``, the rest by uvicorn's httptools protocol."""
        try:
            from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
        except ImportError:  # no httptools (uvicorn[standard] brings it): uvicorn's choice, lookups as ASGI
            return "auto"
        return KeyLookupProtocol.for_lookups(self.app, HttpToolsProtocol)

    def close(self, timeout: float = 10.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)

    # -- the routes ------------------------------------------------------------------------------------

    def _build(self) -> FastAPI:
        @asynccontextmanager
        async def lifespan(_: FastAPI) -> AsyncIterator[None]:
            self._client = HttpPool(self._timeout)
            try:
                yield
            finally:
                await self._client.aclose()

        app = FastAPI(
            title="schemakit streams interactive queries",
            lifespan=lifespan,
            docs_url=None,
            redoc_url=None,
            openapi_url=None,
        )

        @app.exception_handler(QueryError)
        async def query_error(_: Request, exc: QueryError) -> Response:
            headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
            return Response(
                orjson.dumps({"error_code": exc.code, "message": exc.message}),
                status_code=exc.status,
                media_type="application/json",
                headers=headers,
            )

        @app.get("/v1/metadata")
        async def metadata() -> Response:
            source = self.source
            lags = source.task_lags()
            instances = [
                {**dataclasses.asdict(m), "lags": lags.get(m.host.instance, {})}
                for m in source.query_metadata.all_instances()
            ]
            return _json(
                {
                    "application_id": source.application_id,
                    "instance": source.instance_id,
                    "generation": source.assignment().generation,
                    "instances": instances,
                }
            )

        @app.get("/v1/tasks")
        async def tasks() -> Response:
            """This instance's state and tasks (``streams/status.py``; ``schemakit streams status`` reads it)."""
            source = self.source
            metrics = await asyncio.to_thread(source.metrics)
            input_lags = await asyncio.to_thread(source.input_lags)  # asks the log for end offsets
            changelog_lags = source.task_lags().get(source.instance_id, {})
            return _json(instance_status(metrics, input_lags, changelog_lags))

        @app.get("/v1/stores/{store}/metadata")
        async def store_metadata(store: str) -> Response:
            self._check_store(store)
            instances = self.source.query_metadata.for_store(store)
            return _json({"instances": [dataclasses.asdict(m) for m in instances]})

        @app.get("/v1/stores/{store}/keys/{key}/metadata")
        async def key_metadata(store: str, key: str) -> Response:
            typed = self._key(store, key)
            return _json(dataclasses.asdict(self._key_metadata(store, typed)))

        for what in ("windows", "sessions"):
            app.add_api_route(f"/v1/stores/{{store}}/keys/{{key}}/{what}", self._windowed_route(what), methods=["GET"])

        @app.get("/v1/stores/{store}/range")
        async def range_query(
            store: str,
            key_from: str | None = Query(None, alias="from"),
            key_to: str | None = Query(None, alias="to"),
            include_standby: bool = False,
            local: bool = False,
            partitions: str | None = None,
        ) -> Response:
            return await self._scan(store, key_from, key_to, include_standby, local, partitions)

        @app.get("/v1/stores/{store}/all")
        async def all_query(
            store: str, include_standby: bool = False, local: bool = False, partitions: str | None = None
        ) -> Response:
            return await self._scan(store, None, None, include_standby, local, partitions)

        @app.get("/metrics")
        async def metrics() -> Response:
            body, content_type = self.source.metrics_exposition()
            return Response(body, media_type=content_type)

        return app

    # -- helpers ---------------------------------------------------------------------------------------

    def _check_store(self, store: str) -> None:
        try:
            self.source.query_metadata.check_store(store)
        except InvalidStateStoreError as exc:
            raise QueryError(404, STORE_NOT_FOUND, str(exc)) from None

    def _kv_store(self, store: str, include_standby: bool) -> ReadOnlyStore | ReadOnlyVersionedStore:
        view = self.source.store(store, include_standby)
        if not isinstance(view, ReadOnlyStore | ReadOnlyVersionedStore):
            ask = f": ask /v1/stores/{store}/keys/{{key}}/"
            hints: dict[type, str] = {ReadOnlyWindowStore: ask + "windows", ReadOnlySessionStore: ask + "sessions"}
            hint = hints.get(type(view), " (not served over HTTP: read it in process with app.store)")
            raise QueryError(404, STORE_NOT_FOUND, f"store {store!r} is a {_KINDS[type(view)]} store{hint}")
        return view

    def _view_of(self, store: str, kind: type[_Partitioned], include_standby: bool) -> _Partitioned:
        """The store's view, which must be of ``kind`` (the path asked for that kind of store)."""
        self._check_store(store)
        view = self.source.store(store, include_standby)
        if not isinstance(view, kind):
            raise QueryError(
                404, STORE_NOT_FOUND, f"store {store!r} is a {_KINDS[type(view)]} store, not a {_KINDS[kind]} store"
            )
        return view

    def _partition_store(self, view: _Partitioned, partition: int) -> tuple[Any, bool]:
        """This instance's store of ``partition`` and whether it is a replica; 503 if it has none."""
        try:
            ((_, part, stale),) = view.partition_stores([partition])
        except InvalidStateStoreError as exc:
            raise QueryError(503, NOT_AVAILABLE, f"instance {self.source.instance_id}: {exc}", 1) from None
        return part, stale

    def _key(self, store: str, text: str) -> Any:
        self._check_store(store)
        serde = self.source.query_metadata.key_serde(store)
        try:
            return parse_key(serde, text)
        except ValueError as exc:
            raise QueryError(
                422, INVALID_KEY, f"store {store!r}: key {text!r} is not a {type(serde).__name__} key: {exc}"
            ) from None

    def _key_metadata(self, store: str, key: Any) -> Any:
        try:
            return self.source.query_metadata.for_key(store, key, HostInfo(self.source.instance_id, self.advertised))
        except Exception as exc:  # the serde's own errors
            raise QueryError(422, INVALID_KEY, f"store {store!r}: cannot serialize key {key!r}: {exc}") from None

    def _local_get(
        self, store: str, key: Any, partition: int, include_standby: bool, as_of: int | None = None
    ) -> dict[str, Any]:
        view = self._kv_store(store, include_standby)
        kv, stale = self._partition_store(view, partition)
        here = {"partition": partition, "instance": self.source.instance_id, "stale": stale}
        if isinstance(view, ReadOnlyVersionedStore):
            # A versioned store answers with the version: its value, timestamp and valid_to (null: the latest).
            found = kv.get(key, as_of)
            if found is None:
                when = "" if as_of is None else f" as of {as_of}"
                raise QueryError(404, KEY_NOT_FOUND, f"key {key!r} not found in store {store!r}{when}")
            return {"key": key, "value": found.value, "timestamp": found.timestamp, "valid_to": found.valid_to, **here}
        if as_of is not None:
            raise QueryError(400, INVALID_PARAMETER, f"as_of: store {store!r} is not a versioned store")
        value = kv.peek(key)
        if value is None:
            raise QueryError(404, KEY_NOT_FOUND, f"key {key!r} not found in store {store!r}")
        return {"key": key, "value": value, **here}

    def _global_view(self, store: str) -> ReadOnlyGlobalStore:
        try:
            view = self.source.store(store)
        except InvalidStateStoreError as exc:  # closing
            raise _unavailable(self.source, f"instance {self.source.instance_id}: {exc}") from None
        assert isinstance(view, ReadOnlyGlobalStore)
        return view

    def _global_get(self, store: str, key: Any) -> dict[str, Any]:
        """A global store's key, answered here: every instance holds the whole table (partition -1)."""
        value = self._global_view(store).get(key)
        if value is None:
            raise QueryError(404, KEY_NOT_FOUND, f"key {key!r} not found in store {store!r}")
        return {"key": key, "value": value, "partition": -1, "instance": self.source.instance_id, "stale": False}

    def _candidates(self, store: str, partition: int, include_standby: bool) -> tuple[list[tuple[HostInfo, bool]], str]:
        """(host, is standby) to ask for ``partition``, in order, and why there are none if so."""
        meta = self.source.query_metadata.for_partition(store, partition)
        hosts = [(meta.active, False)] if meta.active is not None else []
        if include_standby:
            hosts += [(h, True) for h in meta.standbys]
        why = "" if meta.active is not None else f"task {meta.task} has no active instance now (a rebalance)"
        return hosts, why

    async def _ask(self, host: HostInfo, path: str, params: dict[str, str] | None) -> tuple[int, bytes]:
        assert self._client is not None and host.server is not None
        return await self._client.get(host.server, path, params)

    async def key_lookup(
        self, store: str, text: str, include_standby: bool, local: bool, as_of_text: str | None = None
    ) -> tuple[int, bytes]:
        """``GET /v1/stores/{store}/keys/{text}`` (``?as_of=``: a versioned store's version then): (status, JSON
        body); raises ``QueryError``."""
        typed = self._key(store, text)
        as_of = None if as_of_text is None else parse_time(as_of_text, "as_of")
        meta = self._key_metadata(store, typed)
        if self.source.query_metadata.is_global(store):
            return 200, to_json(self._global_get(store, typed))
        if local:
            return 200, to_json(self._local_get(store, typed, meta.partition, include_standby, as_of))
        return await self._routed(
            store,
            text,
            "",
            {} if as_of_text is None else {"as_of": as_of_text},
            typed,
            meta.partition,
            include_standby,
            lambda standby: self._local_get(store, typed, meta.partition, standby, as_of),
        )

    def _windowed_route(self, what: str) -> Callable[..., Awaitable[Response]]:
        """The endpoint of ``GET /v1/stores/{store}/keys/{key}/windows`` (``what``) or ``/sessions``."""

        async def windowed_fetch(
            store: str,
            key: str,
            time_from: str | None = Query(None, alias="from"),
            time_to: str | None = Query(None, alias="to"),
            include_standby: bool = False,
            local: bool = False,
        ) -> Response:
            return await self._windowed_lookup(store, key, what, time_from, time_to, include_standby, local)

        return windowed_fetch

    async def _windowed_lookup(
        self,
        store: str,
        text: str,
        what: str,
        time_from: str | None,
        time_to: str | None,
        include_standby: bool,
        local: bool,
    ) -> Response:
        """``GET /v1/stores/{store}/keys/{text}/windows`` (``what``) or ``/sessions``."""
        kind: type[_Partitioned] = ReadOnlyWindowStore if what == "windows" else ReadOnlySessionStore
        self._view_of(store, kind, include_standby)
        low = 0 if time_from is None else parse_time(time_from, "from")
        high = MAX_TIME if time_to is None else parse_time(time_to, "to")
        if what == "windows" and low > high:
            raise QueryError(400, INVALID_PARAMETER, f"from ({time_from}) is after to ({time_to})")
        typed = self._key(store, text)
        partition = self._key_metadata(store, typed).partition

        def answer(standby: bool) -> dict[str, Any]:
            part, stale = self._partition_store(self._view_of(store, kind, standby), partition)
            if what == "windows":
                size = part.window_size_ms
                found = [
                    {"start": t, "end": t + size, "value": v} for t, v in retrying(lambda: part.fetch(typed, low, high))
                ]
            else:
                found = [
                    {"start": w.window.start, "end": w.window.end, "value": v}
                    for w, v in retrying(lambda: part.find_sessions(typed, low, high))
                ]
            return {
                "key": typed,
                what: found,
                "partition": partition,
                "instance": self.source.instance_id,
                "stale": stale,
            }

        if local:
            return _json(answer(include_standby))
        params = {name: value for name, value in (("from", time_from), ("to", time_to)) if value is not None}
        status, body = await self._routed(store, text, f"/{what}", params, typed, partition, include_standby, answer)
        return Response(body, status_code=status, media_type="application/json")

    async def _routed(
        self,
        store: str,
        text: str,
        suffix: str,
        params: dict[str, str],
        key: Any,
        partition: int,
        include_standby: bool,
        answer: Callable[[bool], dict[str, Any]],
    ) -> tuple[int, bytes]:
        """Ask ``/v1/stores/{store}/keys/{text}{suffix}`` of the owner of ``partition`` (``answer(standby)``
        when that is this instance), then, with ``include_standby``, of its standbys, until one answers."""
        hosts, why = self._candidates(store, partition, include_standby)
        reasons = [why] if why else []
        owner_restoring = False  # the owner is alive, only not ready: worth asking again soon
        path = f"/v1/stores/{quote(store, safe='')}/keys/{quote(text, safe='')}{suffix}?"
        extra = f"{urlencode(params)}&" if params else ""  # a key lookup's query is a constant: no urlencode
        for host, standby in hosts:
            if host.instance == self.source.instance_id:
                try:
                    return 200, to_json(answer(standby))
                except QueryError as exc:
                    if exc.code != NOT_AVAILABLE:
                        raise
                    reasons.append(exc.message)
                    owner_restoring |= not standby
                    continue
            if host.server is None:
                reasons.append(f"instance {host.instance} has no application_server")
                continue
            flags = "local=true&include_standby=true" if standby else "local=true&include_standby=false"
            try:
                status, body = await self._ask(host, f"{path}{extra}{flags}", None)
            except HttpPoolError as exc:
                reasons.append(f"instance {host.instance} did not answer: {exc}")
                continue
            if status == 503:
                reasons.append(_message(body))
                owner_restoring |= not standby
                continue
            return status, body
        hint = "" if include_standby else "; include_standby=true reads a standby's copy, possibly stale"
        why = "; ".join(reasons) or "no instance holds it"
        message = f"key {key!r} of store {store!r} (partition {partition}) cannot be answered now: {why}{hint}"
        raise QueryError(503, NOT_AVAILABLE, message, 1 if owner_restoring else self.source.retry_after_s)

    def _local_scan(
        self, store: str, low: Any, high: Any, partitions: list[int], include_standby: bool
    ) -> tuple[list[tuple[bytes, Any, Any]], list[int]]:
        """(key bytes, key, value) of ``partitions`` here, and which of them are answered by replicas."""
        try:
            stores = self._kv_store(store, include_standby).partition_stores(partitions)
        except InvalidStateStoreError as exc:
            raise QueryError(503, NOT_AVAILABLE, f"instance {self.source.instance_id}: {exc}", 1) from None
        items: list[tuple[bytes, Any, Any]] = []
        for _, kv, _ in stores:
            items.extend((kv.key_bytes(k), k, v) for k, v in kv.range(low, high))
        return items, [p for p, _, stale in stores if stale]

    async def _scan(
        self,
        store: str,
        key_from: str | None,
        key_to: str | None,
        include_standby: bool,
        local: bool,
        partitions: str | None,
    ) -> Response:
        low = None if key_from is None else self._key(store, key_from)
        high = None if key_to is None else self._key(store, key_to)
        self._check_store(store)
        qm = self.source.query_metadata
        if qm.is_global(store):  # answered here, whole: no partitions to gather
            rows = await asyncio.to_thread(lambda: list(self._global_view(store).range(low, high)))
            return _json({"items": [{"key": k, "value": v} for k, v in rows], "stale_partitions": []})
        count = qm.partitions(store)
        if partitions is not None:
            try:
                wanted = sorted({int(p) for p in partitions.split(",") if p})
            except ValueError:
                raise QueryError(422, INVALID_KEY, f"partitions must be integers, got {partitions!r}") from None
        else:
            wanted = list(range(count))
        if local:
            items, stale = self._local_scan(store, low, high, wanted, include_standby)
            # ``kb``: the key's bytes, base64, so that the asking instance merges in key-byte order exactly
            return _json({"items": [{"kb": kb, "key": k, "value": v} for kb, k, v in items], "stale_partitions": stale})
        pending: dict[int, list[tuple[HostInfo, bool]]] = {}
        reasons: list[str] = []
        for p in wanted:
            hosts, why = self._candidates(store, p, include_standby)
            pending[p] = hosts
            if why:
                reasons.append(why)
        params: dict[str, str] = {"local": "true"}
        if key_from is not None:
            params["from"] = key_from
        if key_to is not None:
            params["to"] = key_to
        path = f"/v1/stores/{quote(store, safe='')}/range"
        all_items: list[tuple[bytes, Any, Any]] = []
        stale_partitions: list[int] = []
        while pending:
            if any(not hosts for hosts in pending.values()):
                hint = "" if include_standby else "; include_standby=true reads standbys' copies, possibly stale"
                missing = sorted(p for p, hosts in pending.items() if not hosts)
                raise _unavailable(
                    self.source,
                    f"partitions {missing} of store {store!r} cannot be answered now: "
                    f"{'; '.join(reasons) or 'no instance holds them'}{hint}",
                )
            groups: dict[tuple[HostInfo, bool], list[int]] = {}
            for p, hosts in pending.items():
                groups.setdefault(hosts[0], []).append(p)

            async def one(host: HostInfo, standby: bool, parts: list[int]) -> tuple[list[Any], list[int]]:
                if host.instance == self.source.instance_id:
                    return self._local_scan(store, low, high, parts, standby)
                if host.server is None:
                    raise QueryError(503, NOT_AVAILABLE, f"instance {host.instance} has no application_server")
                query = {
                    **params,
                    "partitions": ",".join(map(str, parts)),
                    "include_standby": "true" if standby else "false",
                }
                try:
                    status, raw = await self._ask(host, path, query)
                except HttpPoolError as exc:
                    raise QueryError(503, NOT_AVAILABLE, f"it did not answer: {exc}") from None
                if status != 200:
                    raise QueryError(status, _error_code(raw), _message(raw))
                body = orjson.loads(raw)
                items = [(base64.b64decode(i["kb"]), i["key"], i["value"]) for i in body["items"]]
                return items, body["stale_partitions"]

            jobs = list(groups.items())
            results = await asyncio.gather(*(one(h, s, parts) for (h, s), parts in jobs), return_exceptions=True)
            for ((host, _), parts), result in zip(jobs, results, strict=True):
                if isinstance(result, BaseException):
                    if isinstance(result, QueryError) and result.status != 503:
                        raise result
                    reasons.append(f"instance {host.instance}: {getattr(result, 'message', None) or repr(result)}")
                    for p in parts:
                        pending[p] = pending[p][1:]
                    continue
                items, stale = result
                all_items.extend(items)
                stale_partitions.extend(stale)
                for p in parts:
                    del pending[p]
        all_items.sort(key=lambda item: item[0])
        return _json(
            {"items": [{"key": k, "value": v} for _, k, v in all_items], "stale_partitions": sorted(stale_partitions)}
        )
