"""The schema browser at ``/ui/``: static pages (``static/``: HTML, CSS and plain JavaScript, no framework, no
CDN) over the registry's own JSON API, plus a few read-only helper endpoints under ``/ui/api/`` (``api.py``)
where Confluent's API cannot answer a page in one request (a filtered, paged subject list with types and
levels; a subject's versions with their references both ways; a comparison of two versions at every level).

``mount(app)`` adds both to the FastAPI app (``RegistryApp`` in ``registry/app.py`` calls it). The pages send
the browser's own credentials, so they see and may do exactly what the caller may through the API.
"""

from __future__ import annotations

import importlib.resources

from fastapi import FastAPI, Request, Response
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from registry.http import render
from registry.ui import access, api

PREFIX = "/ui"


#: the routers of the helper endpoints (the read cache keys their answers by the query parameters they read)
ROUTERS = [api.router, api.whoami_router]


def mount(app: FastAPI) -> None:
    """Serve the pages at ``/ui/`` and the helper endpoints at ``/ui/api/``."""
    for router in ROUTERS:
        app.include_router(router)
    static = str(importlib.resources.files("registry.ui") / "static")

    # The routing layer drops empty path segments (``/ui/`` arrives as ``/ui``), so the page is answered here
    # and refers to its assets by absolute paths.
    # With authentication on, the page itself asks for credentials (the registry's challenge), so the browser
    # signs in once and sends them with the pages' API requests.
    @app.get(PREFIX, include_in_schema=False)
    async def ui_page(request: Request) -> Response:
        if await access.identify(request) is None:
            body = render.dumps({"error_code": 40101, "message": "Unauthorized: sign in to browse the registry"})
            return Response(body, 401, headers=dict(access.challenges(request)), media_type="application/json")
        return FileResponse(f"{static}/index.html", headers={"cache-control": "no-cache"})

    app.mount(PREFIX, StaticFiles(directory=static), name="ui")
