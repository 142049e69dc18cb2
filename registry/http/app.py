"""The registry's ASGI application: the read cache, then the FastAPI app with one router per resource.

    uvicorn -> [LeaderOffsetHeader, HA only] -> ReadCache -> StartupGate -> KeepEncodedSlashes -> FastAPI (routers/)

``RegistryApp`` is what the server runs. Cached reads are answered by ``ReadCache`` without entering the
framework; everything else goes through FastAPI: ``RegistryRoute`` (content types, forwarding of writes),
the typed parameters and bodies of ``params.py`` / ``models.py``, the operations of ``Service``, the
renderers of ``render.py``, and the error handlers of ``errors.py``. ``/docs`` serves the live API
documentation (Swagger UI from the ``fastapi-offline`` package's files, no CDN), ``/openapi.json`` the
document that ``openapi.yaml`` is a copy of. The operations endpoints (``routers/operations.py``: health,
metrics) are routes of the same app, outside the API document, and so is the schema browser (``registry/ui``:
``/ui/`` and its ``/ui/api/`` helpers). ``StartupGate`` answers 503 to the API while the
startup replay runs (only the operations endpoints answer then); it sits behind the cache, which is empty until
then, so cached reads never pass it.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from registry import __version__
from registry.health import Health
from registry.http import errors, render
from registry.http.body import BodyLimits
from registry.http.content import CT_V1
from registry.http.openapi import TITLE, document
from registry.http.read_cache import ReadCache, ReadGuard
from registry.http.routers import ROUTERS, operations, query_parameter_names
from registry.http.security import Authenticated, SecurityGuard
from registry.metrics import Metrics
from registry.ui import ROUTERS as ui_routers
from registry.ui import mount as mount_ui

if TYPE_CHECKING:
    from registry.forwarder import Forwarder
    from registry.leader import Election
    from registry.security import Security
    from registry.service import Service

DOCS_ASSETS = "/docs/assets"


def build_api(
    service: Service | None = None,
    forwarder: Forwarder | None = None,
    cluster_id: str = "schemakit",
    security: Security | None = None,
    *,
    health: Health | None = None,
    metrics: Metrics | None = None,
    election: Election | None = None,
) -> FastAPI:
    """The FastAPI app (routes, error handlers, docs). Without a service it can only describe itself; without
    ``security`` (no ``--auth``) every route is open."""
    api = FastAPI(
        title=TITLE,
        version=__version__,
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,
        separate_input_output_schemas=False,
    )
    api.state.service = service
    api.state.forwarder = forwarder
    api.state.cluster_id = cluster_id
    api.state.security = security
    api.state.health = health if health is not None else Health()
    api.state.metrics = metrics if metrics is not None else Metrics()
    api.state.election = election
    errors.install(api)
    for router in ROUTERS:
        api.include_router(router, dependencies=[Authenticated])  # every API route: 401 unless authenticated
    api.include_router(operations.router)  # health and metrics stay open: probes and scrapers hold no credentials
    _add_docs(api)
    mount_ui(api)

    def openapi() -> dict[str, Any]:
        if api.openapi_schema is None:
            api.openapi_schema = document(api)
        return api.openapi_schema

    api.openapi = openapi  # type: ignore[method-assign]
    return api


def _add_docs(api: FastAPI) -> None:
    assets = importlib.resources.files("fastapi_offline") / "static"
    api.mount(DOCS_ASSETS, StaticFiles(directory=str(assets)), name="docs-assets")

    @api.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{TITLE} - API documentation",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon.png",
        )


class KeepEncodedSlashes:
    """Routing sees the path with each segment decoded except ``/`` (and ``%``), so a subject containing
    ``%2F`` (Protobuf import paths) stays one path parameter; ``params.Subject`` decodes the rest. Empty
    segments are dropped (``/subjects/`` is ``/subjects``), as Confluent's server matches them."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            raw: bytes = scope.get("raw_path") or quote(scope["path"]).encode()
            segments = [unquote(s) for s in raw.decode("latin-1").split("/") if s]
            scope["path"] = "/" + "/".join(s.replace("%", "%25").replace("/", "%2F") for s in segments)
        await self.app(scope, receive, send)


class StartupGate:
    """Until ``health.serving`` (the startup replay is done), the API answers 503 with ``Retry-After``; the
    operations endpoints answer throughout."""

    def __init__(self, app: Any, health: Health) -> None:
        self.app = app
        self.health = health

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.health.serving or scope["type"] != "http" or scope["path"] in operations.PATHS:
            await self.app(scope, receive, send)
            return
        body = render.dumps({"error_code": 503, "message": "The registry is starting: replaying the _schemas log"})
        headers = [(b"content-type", CT_V1), (b"content-length", str(len(body)).encode()), (b"retry-after", b"1")]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class RegistryApp(ReadCache):
    """The ASGI application of one registry instance: the read cache in front of the API (a subclass rather
    than a wrapper, so a hit costs no extra call).

    ``forwarder`` (several instances) sends writes to the leader when this node is not it; ``security``
    (``--auth``) authenticates and authorizes every API request, and guards cached answers
    (``http/security.py``; ``guard`` replaces that check in front of the cache). The service's ``limits``
    bound request bodies and the cache. ``on_startup`` and ``on_shutdown`` hold coroutines run by the ASGI
    lifespan (the server opens and closes the log there). ``health`` says when the API may answer
    (``StartupGate``; serving from the start when not given) and what the health endpoints report; ``metrics``
    counts requests (this layer) and what the service reports."""

    def __init__(
        self,
        service: Service,
        forwarder: Forwarder | None = None,
        cluster_id: str = "schemakit",
        *,
        security: Security | None = None,
        guard: ReadGuard | None = None,
        health: Health | None = None,
        metrics: Metrics | None = None,
        election: Election | None = None,
    ) -> None:
        self.service = service
        self.forwarder = forwarder
        self.security = security
        if health is None:
            health = Health()
            health.serving = True
        self.health = health
        self.metrics = metrics if metrics is not None else Metrics()
        self.on_startup: list[Callable[[], Awaitable[None]]] = []
        self.on_shutdown: list[Callable[[], Awaitable[None]]] = []
        #: why the instance could not start (None: it did, or is still starting)
        self.failed: str | None = None
        #: stops the server (set by whoever runs the app; a no-op otherwise)
        self.stop: Callable[[], None] = lambda: None
        self.api = build_api(
            service, forwarder, cluster_id, security, health=health, metrics=self.metrics, election=election
        )
        if guard is None and security is not None:
            guard = SecurityGuard(security)
        self.api.router.lifespan_context = self._lifespan
        limits = service.limits
        super().__init__(
            StartupGate(KeepEncodedSlashes(self.api), health),
            service.state,
            guard=guard,
            requests=self.metrics.requests,
            max_bytes=limits.response_cache_bytes,
            query_names=query_parameter_names([*ROUTERS, operations.router, *ui_routers]),
            bodies=BodyLimits(limits.max_request_bytes, limits.body_timeout),
        )

    @asynccontextmanager
    async def _lifespan(self, _app: Any) -> AsyncIterator[None]:
        for fn in self.on_startup:
            await fn()
        yield
        for fn in self.on_shutdown:
            await fn()
