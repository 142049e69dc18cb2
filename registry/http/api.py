"""The FastAPI app of the registry's API (``build_api``) and the two ASGI layers in front of it.

    uvicorn -> [LeaderOffsetHeader, HA only] -> ReadCache -> StartupGate -> KeepEncodedSlashes -> FastAPI (routers/)

``registry/app.py`` assembles that stack (``RegistryApp``) and adds the schema browser (``registry/ui``) to the
app built here. Cached reads are answered by ``ReadCache`` without entering the framework; everything else goes
through FastAPI: ``RegistryRoute`` (content types, forwarding of writes), the typed parameters and bodies of
``params.py`` / ``models.py``, the operations of ``Service``, the renderers of ``render.py``, and the error
handlers of ``errors.py``. ``/docs`` serves the live API documentation (Swagger UI from the
``fastapi-offline`` package's files, no CDN), ``/openapi.json`` the document that ``openapi.yaml`` is a copy
of. The operations endpoints (``routers/operations.py``: health, metrics) are routes of the same app, outside
the API document. ``StartupGate`` answers 503 to the API while the startup replay runs (only the operations
endpoints answer then); it sits behind the cache, which is empty until then, so cached reads never pass it.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from registry import __version__
from registry.health import Health
from registry.http import errors, render
from registry.http.content import CT_V1
from registry.http.openapi import TITLE, document
from registry.http.routers import ROUTERS, operations
from registry.http.security import Authenticated
from registry.metrics import Metrics

if TYPE_CHECKING:
    from registry.dek.service import DekService
    from registry.exporters import ExporterManager
    from registry.forwarder import Forwarder
    from registry.leader import Election
    from registry.security import Security
    from registry.service import Service

DOCS_ASSETS = "/docs/assets"


@dataclass
class ApiParts:
    """What the API's routes answer from and report to, each kept on ``api.state`` under its name. Without a
    service the app can only describe itself; without ``security`` (no ``--auth``) every route is open; without
    ``dek_service`` the DEK registry's routes answer 404; ``health`` and ``metrics`` are fresh ones when not given."""

    service: Service | None = None
    forwarder: Forwarder | None = None
    cluster_id: str = "schemakit"
    security: Security | None = None
    health: Health | None = None
    metrics: Metrics | None = None
    election: Election | None = None
    exporters: ExporterManager | None = None
    dek_service: DekService | None = None


def build_api(parts: ApiParts | None = None) -> FastAPI:
    """The FastAPI app (routes, error handlers, docs; the schema browser is added by ``RegistryApp``) over
    ``parts`` (none: an app that can only describe itself)."""
    api = FastAPI(
        title=TITLE,
        version=__version__,
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,
        separate_input_output_schemas=False,
    )
    parts = parts if parts is not None else ApiParts()
    for part in dataclasses.fields(parts):
        setattr(api.state, part.name, getattr(parts, part.name))
    if parts.health is None:
        api.state.health = Health()
    if parts.metrics is None:
        api.state.metrics = Metrics()
    errors.install(api)
    for router in ROUTERS:
        api.include_router(router, dependencies=[Authenticated])  # every API route: 401 unless authenticated
    api.include_router(operations.router)  # health and metrics stay open: probes and scrapers hold no credentials
    _add_docs(api)

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
    ``%2F`` (Protobuf import paths) stays one path parameter; ``params.SubjectPath`` decodes the rest. Empty
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
