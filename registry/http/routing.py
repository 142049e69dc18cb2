"""``RegistryRoute``: what every API route does around its endpoint, in Confluent's order.

1. A POST/PUT body of a type the registry does not take: 415. An ``Accept`` it cannot satisfy: 406.
2. ``@leader_only`` routes (writes) on a follower are forwarded to the leader (``registry/forwarder.py``),
   whose answer is passed through unchanged; with ``--auth`` the caller is authenticated first and the
   leader authorizes (``security.forward_headers``).
3. Cacheable routes (every GET, and ``@cached_read`` ones) mark the read cache's ticket (``read_cache.py``).
4. The endpoint answers with ``ok(body)``: pre-rendered bytes, sent with the negotiated JSON type.
5. An exception that is not an API error is logged and answered 500 (Confluent's 500 envelope).

Routes that read a body take it through ``params.JsonBody``; the route documents that model as its request
body by itself. It documents by itself too the error answers that follow from what a route is: 406 (every
route), 400 (a JSON body or an integer query parameter), 415 (POST/PUT), 500 (``@leader_only``); a route's
``responses=`` lists only the answers its own operation gives.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from fastapi import Request, Response
from fastapi._compat import ModelField
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import get_dependant, get_parameterless_sub_dependant
from fastapi.exceptions import RequestValidationError
from fastapi.params import Depends
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from registry import errors
from registry.errors import ApiError
from registry.http.content import CT_JSON, CT_SR, CT_V1, body_type_accepted, header, negotiate
from registry.http.errors import Doc
from registry.http.params import JsonBody
from registry.http.read_cache import TICKET, ReadTicket
from registry.http.security import forward_headers

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
JSON_TYPES = tuple(t.decode() for t in (CT_V1, CT_SR, CT_JSON))


def leader_only(endpoint: F) -> F:
    """Marks a write: only the leader executes it; a follower forwards the request."""
    endpoint.leader_only = True  # type: ignore[attr-defined]
    return endpoint


def cached_read(endpoint: F) -> F:
    """Marks a non-GET read whose answers the read cache may keep (the lookup POST)."""
    endpoint.cached_read = True  # type: ignore[attr-defined]
    return endpoint


def live_read(endpoint: F) -> F:
    """Marks a GET whose answer changes without a record being applied (an exporter's status): never cached."""
    endpoint.live_read = True  # type: ignore[attr-defined]
    return endpoint


def ok(body: bytes) -> Response:
    """A 200 with a rendered JSON body (``RegistryRoute`` adds the negotiated content type)."""
    return Response(body)


#: the 200 of the routes answering a schema's text itself (by id, by subject version), sent with the negotiated
#: JSON type as Confluent does
SCHEMA_TEXT_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The schema text itself (JSON for Avro and JSON Schema, `.proto` source for Protobuf).",
        "content": {t: {} for t in JSON_TYPES},
    }
}


def _inputs(path: str, endpoint: Callable[..., Any], dependencies: Sequence[Depends] | None) -> Dependant:
    """What a route reads from the request (its endpoint's and its dependencies' parameters), as FastAPI will
    find it: known before the route is built, because its documented answers depend on it."""
    path_format = compile_path(path)[1]
    dependant = get_dependant(path=path_format, call=endpoint)
    dependant.dependencies[:0] = [
        get_parameterless_sub_dependant(depends=d, path=path_format) for d in dependencies or ()
    ]
    return dependant


def query_params(dependant: Dependant) -> list[ModelField]:
    """The query parameters a route (or dependency) reads, its dependencies' (``params.PageQuery``) included."""
    found = list(dependant.query_params)
    for d in dependant.dependencies:
        found += query_params(d)
    return found


def _body_models(dependant: Dependant) -> list[JsonBody[Any]]:
    found = [d.call for d in dependant.dependencies if isinstance(d.call, JsonBody)]
    for d in dependant.dependencies:
        found += _body_models(d)
    return found


class RegistryRoute(APIRoute):
    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        methods = set(kwargs.get("methods") or ("GET",))
        self.leader_only: bool = getattr(endpoint, "leader_only", False)
        self.cached: bool = ("GET" in methods and not getattr(endpoint, "live_read", False)) or getattr(
            endpoint, "cached_read", False
        )
        self.checks_body_type = bool(methods & {"POST", "PUT"})
        inputs = _inputs(path, endpoint, kwargs.get("dependencies"))
        bodies = _body_models(inputs)
        #: the model of the JSON body the endpoint reads, if any
        self.body_model = bodies[0].model if bodies else None
        responses = dict(Doc.not_acceptable)
        if self.body_model is not None or any(p.field_info.annotation is int for p in query_params(inputs)):
            responses.update(Doc.bad_request)
        responses.update(kwargs.get("responses") or {})
        if self.checks_body_type:
            responses.update(Doc.unsupported_media_type)
        if self.leader_only:
            responses.update(Doc.store_error)
        kwargs["responses"] = responses
        if self.body_model is not None:
            schema = {"$ref": f"#/components/schemas/{self.body_model.__name__}"}
            kwargs["openapi_extra"] = {
                **(kwargs.get("openapi_extra") or {}),
                "requestBody": {"required": True, "content": {t: {"schema": schema} for t in JSON_TYPES}},
            }
        super().__init__(path, endpoint, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()
        checks_body_type, leader_only, cached = self.checks_body_type, self.leader_only, self.cached

        async def route_handler(request: Request) -> Response:
            scope = request.scope
            headers = scope["headers"]
            if checks_body_type and not body_type_accepted(header(headers, b"content-type")):
                raise errors.unsupported_media_type()
            media = negotiate(header(headers, b"accept"))
            if media is None:
                raise errors.not_acceptable()
            if leader_only:
                forwarded = await _forward(request)
                if forwarded is not None:
                    status, body = forwarded
                    return Response(body, status, media_type=media.decode())
            if cached:
                ticket: ReadTicket | None = scope.get(TICKET)
                if ticket is not None:
                    ticket.cacheable = True
            try:
                response = await handle(request)
            except (ApiError, StarletteHTTPException, RequestValidationError):
                raise
            except Exception:
                log.exception("internal error on %s %s", request.method, scope.get("raw_path", b"").decode("latin-1"))
                raise errors.internal_server_error() from None
            response.raw_headers.append((b"content-type", media))
            return response

        return route_handler


async def _forward(request: Request) -> tuple[int, bytes] | None:
    """The leader's answer when this node does not lead, else None (execute here)."""
    forwarder = request.app.state.forwarder
    if forwarder is None:
        return None
    scope = request.scope
    headers = scope["headers"]
    if request.app.state.security is not None:
        headers = await forward_headers(request)  # 401 here for strangers; the leader authorizes
    result: tuple[int, bytes] | None = await forwarder.maybe_forward(
        scope["method"],
        scope.get("raw_path") or scope["path"].encode(),
        scope.get("query_string", b""),
        headers,
        await request.body(),
    )
    return result
