"""The HTTP layer: a small ASGI app that routes Confluent's v1 paths to ``Service``.

Written directly against ASGI (no framework) because reads are the hot path: a GET by id is a dict
lookup plus pre-rendered bytes, and a framework's per-request machinery would cost more than that.
Routing works on the raw path so ``%2F`` inside a subject name stays part of the subject.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote

import orjson

from registry import __version__, errors
from registry.errors import ApiError
from registry.schema_types import schema_types
from registry.service import (
    SchemaRequest,
    Service,
    check_subject,
    dumps,
    normalize_subject,
    page,
    parse_bool,
)

if TYPE_CHECKING:
    from registry.forwarder import Forwarder

log = logging.getLogger(__name__)

CT_V1 = b"application/vnd.schemaregistry.v1+json"
CT_SR = b"application/vnd.schemaregistry+json"
CT_JSON = b"application/json"
ACCEPTED_BODY_TYPES = (CT_V1, CT_SR, CT_JSON, b"application/octet-stream")
CACHE_SIZE = 50_000  # cached read answers (then no more until the next change empties the cache)


@dataclass(slots=True)
class Request:
    params: dict[str, str]  # path parameters, percent-decoded
    query: dict[str, list[str]]
    body: bytes

    def q(self, name: str, default: str | None = None) -> str | None:
        v = self.query.get(name)
        return v[0] if v else default

    def qbool(self, name: str, default: bool = False) -> bool:
        return parse_bool(self.q(name), default)

    def qint(self, name: str, default: int) -> int:
        v = self.q(name)
        if v is None or v == "":
            return default
        try:
            return int(v)
        except ValueError:
            raise errors.bad_request(f"Query parameter '{name}' must be an integer, got '{v}'") from None

    def json(self) -> Any:
        if not self.body.strip():
            raise errors.bad_request("Request body is empty; a JSON object is required")
        try:
            return orjson.loads(self.body)
        except orjson.JSONDecodeError as e:
            raise errors.bad_request(f"Unexpected character in JSON body: {e}") from None


#: a handler returns bytes (a JSON body, sent as is) or any JSON-able value
Handler = Callable[["RegistryApp", Request], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    parts: tuple[str, ...]  # literal segments, or "{name}" for a parameter
    handler: Handler
    write: bool = False  # a mutating route: only the leader executes it
    cached: bool = False  # a read answered from the response cache (every GET, and POST lookup)


class Router:
    def __init__(self) -> None:
        self._by_shape: dict[tuple[int, str], list[Route]] = {}
        self.routes: list[Route] = []

    def add(self, method: str, path: str, handler: Handler, *, write: bool = False, cached: bool = False) -> None:
        parts = tuple(p for p in path.split("/") if p)
        route = Route(method, parts, handler, write, cached or method == "GET")
        self.routes.append(route)
        first = parts[0] if parts else ""
        self._by_shape.setdefault((len(parts), first), []).append(route)

    def match(self, method: str, segments: list[str]) -> tuple[Route, dict[str, str]]:
        first = segments[0] if segments else ""
        candidates = self._by_shape.get((len(segments), first), ())
        path_matched = False
        for route in candidates:
            params: dict[str, str] = {}
            for pat, seg in zip(route.parts, segments, strict=True):
                if pat[0] == "{":
                    params[pat[1:-1]] = unquote(seg)
                elif pat != seg:
                    break
            else:  # every literal segment matched
                path_matched = True
                if route.method == method:
                    return route, params
        if first == "associations" and method == "GET" and len(segments) > 1:
            return Route("GET", (), _associations), {"resource": unquote(segments[-1])}
        raise errors.method_not_allowed() if path_matched else errors.not_found_route()


router = Router()


def route(method: str, path: str, *, write: bool = False, cached: bool = False) -> Callable[[Handler], Handler]:
    def deco(fn: Handler) -> Handler:
        router.add(method, path, fn, write=write, cached=cached)
        return fn

    return deco


def _subject(req: Request, *, register: bool = False) -> str:
    s = normalize_subject(req.params["subject"])
    if register:
        check_subject(s, for_register=True)
    return s


def _schema_id(req: Request) -> int:
    try:
        return int(req.params["id"])
    except ValueError:
        raise errors.not_found_route() from None


class RawText(str):
    """A handler result sent as the raw schema text (``.../schema`` endpoints)."""


class RegistryApp:
    """The ASGI application. ``forwarder`` (HA) sends writes to the leader when this node is not it."""

    def __init__(self, service: Service, forwarder: Forwarder | None = None, cluster_id: str = "schemakit") -> None:
        self.service = service
        self.forwarder = forwarder
        self.cluster_id = cluster_id
        self.on_startup: list[Callable[[], Awaitable[None]]] = []
        self.on_shutdown: list[Callable[[], Awaitable[None]]] = []
        # Answers of reads are a pure function of (request, state): keep the 200s until the state changes (any
        # applied record bumps state.generation). A hit skips routing, parsing and rendering altogether.
        self._cache: dict[tuple[bytes, bytes, bytes], bytes] = {}
        self._cache_generation = -1

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                try:
                    for fn in self.on_startup:
                        await fn()
                except Exception as e:  # report and let the server exit
                    log.exception("startup failed")
                    await send({"type": "lifespan.startup.failed", "message": str(e)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif msg["type"] == "lifespan.shutdown":
                for fn in self.on_shutdown:
                    await fn()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        method = scope["method"]
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        headers = scope["headers"]
        qs = scope.get("query_string", b"")
        generation = self.service.state.generation
        if generation != self._cache_generation:
            self._cache.clear()
            self._cache_generation = generation
        if method == "GET":
            hit = self._cache.get((raw_path, qs, b""))
            if hit is not None:
                await _send(send, 200, hit, _content_type(headers))
                return
        segments = [s for s in raw_path.decode("latin-1").split("/") if s]
        cache_key = None
        try:
            route_, params = router.match(method, segments)
            body = b""
            if method in ("POST", "PUT"):
                body = await _read_body(receive)
                _check_content_type(headers)
                if route_.cached:
                    cache_key = (raw_path, qs, body)
                    hit = self._cache.get(cache_key)
                    if hit is not None:
                        await _send(send, 200, hit, _content_type(headers))
                        return
            elif route_.cached:
                cache_key = (raw_path, qs, b"")
            query = parse_qs(qs.decode("latin-1"), keep_blank_values=True) if qs else {}
            req = Request(params, query, body)
            if route_.write and self.forwarder is not None:
                forwarded = await self.forwarder.maybe_forward(method, raw_path, qs, headers, body)
                if forwarded is not None:
                    status, fwd_body = forwarded
                    await _send(send, status, fwd_body, _content_type(headers))
                    return
            result = await route_.handler(self, req)
        except ApiError as e:
            await _send_error(send, e)
            return
        except Exception:
            log.exception("internal error on %s %s", method, raw_path)
            await _send_error(send, errors.internal_server_error())
            return
        if type(result) is bytes:
            out = result
        elif isinstance(result, RawText):
            out = str(result).encode()
        else:
            out = dumps(result)
        # Only cache what was computed from the state the request saw (a handler that awaited may have seen a
        # newer state; then the generation moved and the answer is simply not kept).
        if cache_key is not None and self.service.state.generation == generation and len(self._cache) < CACHE_SIZE:
            self._cache[cache_key] = out
        await _send(send, 200, out, _content_type(headers))


async def _read_body(receive: Any) -> bytes:
    chunks = []
    while True:
        msg = await receive()
        chunks.append(msg.get("body", b""))
        if not msg.get("more_body"):
            break
    return b"".join(chunks)


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    for k, v in headers:
        if k == name:
            return v
    return None


def _check_content_type(headers: list[tuple[bytes, bytes]]) -> None:
    ct = _header(headers, b"content-type")
    if ct is None:
        return
    base = ct.split(b";", 1)[0].strip().lower()
    if base not in ACCEPTED_BODY_TYPES:
        raise errors.unsupported_media_type()


def _content_type(headers: list[tuple[bytes, bytes]]) -> bytes:
    """Confluent's preference order: v1 vendor type, then the unversioned vendor type, then plain JSON."""
    accept = _header(headers, b"accept")
    if accept is None or CT_V1 in accept or b"*/*" in accept:
        return CT_V1
    if CT_SR in accept:
        return CT_SR
    if CT_JSON in accept:
        return CT_JSON
    return CT_V1


async def _send_error(send: Any, e: ApiError) -> None:
    await _send(send, e.status, dumps({"error_code": e.error_code, "message": e.message}), CT_V1)


async def _send(send: Any, status: int, body: bytes, content_type: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


# ---- routes ---------------------------------------------------------------------------------------------


@route("GET", "/")
async def _root(app: RegistryApp, req: Request) -> Any:
    return b"{}"


@route("POST", "/")
async def _root_post(app: RegistryApp, req: Request) -> Any:
    return b"{}"


@route("GET", "/subjects")
async def _list_subjects(app: RegistryApp, req: Request) -> Any:
    subjects = app.service.list_subjects(
        req.q("subjectPrefix", ":*:") or "",
        deleted=req.qbool("deleted"),
        deleted_only=req.qbool("deletedOnly") or req.qbool("deleted_only"),
    )
    return page(subjects, req.qint("offset", 0), req.qint("limit", -1))


@route("POST", "/subjects/{subject}", cached=True)
async def _lookup(app: RegistryApp, req: Request) -> Any:
    subject = _subject(req)
    sreq = SchemaRequest(req.json())
    v = await app.service.lookup(subject, sreq, normalize=req.qbool("normalize"), deleted=req.qbool("deleted"))
    return await app.service.version_body_formatted(v, req.q("format"))


@route("DELETE", "/subjects/{subject}", write=True)
async def _delete_subject(app: RegistryApp, req: Request) -> Any:
    return await app.service.delete_subject(_subject(req), permanent=req.qbool("permanent"))


@route("GET", "/subjects/{subject}/versions")
async def _list_versions(app: RegistryApp, req: Request) -> Any:
    versions = app.service.list_versions(
        _subject(req),
        deleted=req.qbool("deleted"),
        deleted_only=req.qbool("deletedOnly") or req.qbool("deleted_only"),
        as_negative=req.qbool("deletedAsNegative"),
    )
    return page(versions, req.qint("offset", 0), req.qint("limit", -1))


@route("POST", "/subjects/{subject}/versions", write=True)
async def _register(app: RegistryApp, req: Request) -> Any:
    subject = _subject(req, register=True)
    sreq = SchemaRequest(req.json())
    normalize = parse_bool(req.q("normalize")) if req.q("normalize") is not None else None
    schema_id = await app.service.register(subject, sreq, normalize=normalize, force=req.qbool("force"))
    return {"id": schema_id}


@route("GET", "/subjects/{subject}/versions/{version}")
async def _get_version(app: RegistryApp, req: Request) -> Any:
    v = app.service.get_version(_subject(req), req.params["version"], deleted=req.qbool("deleted"))
    fmt = req.q("format")
    return await app.service.version_body_formatted(v, fmt) if fmt else app.service.version_body(v)


@route("GET", "/subjects/{subject}/versions/{version}/schema")
async def _get_version_schema(app: RegistryApp, req: Request) -> Any:
    v = app.service.get_version(_subject(req), req.params["version"], deleted=req.qbool("deleted"))
    return RawText(await app.service.formatted(v.content, v.id, req.q("format")))


@route("DELETE", "/subjects/{subject}/versions/{version}", write=True)
async def _delete_version(app: RegistryApp, req: Request) -> Any:
    return await app.service.delete_version(
        _subject(req), req.params["version"], permanent=req.qbool("permanent")
    )


@route("GET", "/subjects/{subject}/versions/{version}/referencedby")
async def _referenced_by(app: RegistryApp, req: Request) -> Any:
    ids = app.service.referenced_by(_subject(req), req.params["version"], deleted=req.qbool("deleted"))
    return page(ids, req.qint("offset", 0), req.qint("limit", -1))


@route("GET", "/subjects/{subject}/metadata")
async def _latest_with_metadata(app: RegistryApp, req: Request) -> Any:
    v = app.service.latest_with_metadata(
        _subject(req), req.query.get("key", []), req.query.get("value", []), deleted=req.qbool("deleted")
    )
    return await app.service.version_body_formatted(v, req.q("format"))


@route("GET", "/schemas")
async def _list_schemas(app: RegistryApp, req: Request) -> Any:
    svc = app.service
    versions = svc.all_schemas(
        req.q("subjectPrefix", "") or "", deleted=req.qbool("deleted"), latest_only=req.qbool("latestOnly")
    )
    chosen = page(versions, req.qint("offset", 0), req.qint("limit", -1))
    return b"[" + b",".join(svc.version_body(v) for v in chosen) + b"]"


@route("GET", "/schemas/types")
async def _schema_types(app: RegistryApp, req: Request) -> Any:
    return schema_types()


@route("GET", "/schemas/ids/{id}")
async def _schema_by_id(app: RegistryApp, req: Request) -> Any:
    if not req.query:
        return app.service.schema_by_id(_schema_id(req))
    return await app.service.schema_by_id_formatted(
        _schema_id(req), fmt=req.q("format"), fetch_max_id=req.qbool("fetchMaxId")
    )


@route("GET", "/schemas/ids/{id}/schema")
async def _schema_text_by_id(app: RegistryApp, req: Request) -> Any:
    return RawText(await app.service.schema_text_by_id(_schema_id(req), req.q("format")))


@route("GET", "/schemas/ids/{id}/subjects")
async def _subjects_by_id(app: RegistryApp, req: Request) -> Any:
    pairs = app.service.id_versions(_schema_id(req), deleted=req.qbool("deleted"))
    subjects = sorted({s for s, _ in pairs})
    prefix = req.q("subject")
    if prefix:
        subjects = [s for s in subjects if s == normalize_subject(prefix)]
    return page(subjects, req.qint("offset", 0), req.qint("limit", -1))


@route("GET", "/schemas/ids/{id}/versions")
async def _versions_by_id(app: RegistryApp, req: Request) -> Any:
    pairs = app.service.id_versions(_schema_id(req), deleted=req.qbool("deleted"))
    subject = req.q("subject")
    if subject:
        pairs = [p for p in pairs if p[0] == normalize_subject(subject)]
    items = [{"subject": s, "version": v} for s, v in pairs]
    return page(items, req.qint("offset", 0), req.qint("limit", -1))


@route("GET", "/config")
async def _get_global_config(app: RegistryApp, req: Request) -> Any:
    return app.service.get_config(None, default_to_global=True)


@route("PUT", "/config", write=True)
async def _put_global_config(app: RegistryApp, req: Request) -> Any:
    return await app.service.put_config(None, req.json())


@route("DELETE", "/config", write=True)
async def _delete_global_config(app: RegistryApp, req: Request) -> Any:
    return await app.service.delete_config(None)


@route("GET", "/config/{subject}")
async def _get_config(app: RegistryApp, req: Request) -> Any:
    return app.service.get_config(_subject(req), default_to_global=req.qbool("defaultToGlobal"))


@route("PUT", "/config/{subject}", write=True)
async def _put_config(app: RegistryApp, req: Request) -> Any:
    return await app.service.put_config(_subject(req), req.json())


@route("DELETE", "/config/{subject}", write=True)
async def _delete_config(app: RegistryApp, req: Request) -> Any:
    return await app.service.delete_config(_subject(req))


@route("GET", "/mode")
async def _get_global_mode(app: RegistryApp, req: Request) -> Any:
    return {"mode": app.service.get_mode(None, default_to_global=True)}


@route("PUT", "/mode", write=True)
async def _put_global_mode(app: RegistryApp, req: Request) -> Any:
    return await app.service.put_mode(None, req.json(), force=req.qbool("force"))


@route("DELETE", "/mode", write=True)
async def _delete_global_mode(app: RegistryApp, req: Request) -> Any:
    return await app.service.delete_mode(None)


@route("GET", "/mode/{subject}")
async def _get_mode(app: RegistryApp, req: Request) -> Any:
    return {"mode": app.service.get_mode(_subject(req), default_to_global=req.qbool("defaultToGlobal"))}


@route("PUT", "/mode/{subject}", write=True)
async def _put_mode(app: RegistryApp, req: Request) -> Any:
    return await app.service.put_mode(_subject(req), req.json(), force=req.qbool("force"))


@route("DELETE", "/mode/{subject}", write=True)
async def _delete_mode(app: RegistryApp, req: Request) -> Any:
    return await app.service.delete_mode(_subject(req))


def _normalize_param(req: Request) -> bool | None:
    return parse_bool(req.q("normalize")) if req.q("normalize") is not None else None


@route("POST", "/compatibility/subjects/{subject}/versions/{version}")
async def _compat_version(app: RegistryApp, req: Request) -> Any:
    sreq = SchemaRequest(req.json())
    return await app.service.test_compatibility(
        _subject(req),
        req.params["version"],
        sreq,
        normalize=_normalize_param(req),
        verbose=req.qbool("verbose"),
    )


@route("POST", "/compatibility/subjects/{subject}/versions")
async def _compat_all(app: RegistryApp, req: Request) -> Any:
    sreq = SchemaRequest(req.json())
    return await app.service.test_compatibility(
        _subject(req), None, sreq, normalize=_normalize_param(req), verbose=req.qbool("verbose")
    )


@route("GET", "/contexts")
async def _contexts(app: RegistryApp, req: Request) -> Any:
    return page(["."], req.qint("offset", 0), req.qint("limit", -1))


@route("GET", "/v1/metadata/id")
async def _metadata_id(app: RegistryApp, req: Request) -> Any:
    return {
        "scope": {
            "path": [],
            "clusters": {"kafka-cluster": app.cluster_id, "schema-registry-cluster": "schema-registry"},
        }
    }


@route("GET", "/v1/metadata/version")
async def _metadata_version(app: RegistryApp, req: Request) -> Any:
    return {"version": __version__, "commitId": _commit_id()}


async def _associations(app: RegistryApp, req: Request) -> Any:
    raise errors.association_not_found(req.params.get("resource", ""))


def _commit_id() -> str:
    from registry import build_info

    return build_info.commit_id()
