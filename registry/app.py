"""The ASGI application of one registry instance (``RegistryApp``): the read cache in front of the API and the
schema browser.

    uvicorn -> [LeaderOffsetHeader, HA only] -> ReadCache -> StartupGate -> KeepEncodedSlashes -> FastAPI

The FastAPI app is the API's (``registry/http/api.py``: routers, error handlers, docs, operations endpoints)
with the schema browser added (``registry/ui``: ``/ui/`` and its ``/ui/api/`` helpers). It is put together
here, above both, because the browser's helpers are ``RegistryRoute``s of the HTTP layer: ``ui`` depends on
``http``, never the other way round.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from registry import ui
from registry.exporters import ExporterManager
from registry.health import Health
from registry.http.api import ApiParts, KeepEncodedSlashes, StartupGate, build_api
from registry.http.body import BodyLimits
from registry.http.read_cache import ReadCache, ReadGuard
from registry.http.routers import ROUTERS, operations, query_parameter_names
from registry.http.security import SecurityGuard
from registry.metrics import Metrics


class RegistryApp(ReadCache):
    """The ASGI application of one registry instance: the read cache in front of the API and the schema
    browser (a subclass rather than a wrapper, so a hit costs no extra call).

    ``parts`` are what the API answers from (``http/api.py``; a service is required): ``forwarder`` (several
    instances) sends writes to the leader when this node is not it; ``security`` (``--auth``) authenticates and
    authorizes every API request, and guards cached answers (``http/security.py``; ``guard`` replaces that check
    in front of the cache). The service's ``limits`` bound request bodies and the cache. ``on_startup`` and
    ``on_shutdown`` hold coroutines run by the ASGI lifespan (the server opens and closes the log there).
    ``health`` says when the API may answer (``StartupGate``; serving from the start when not given) and what
    the health endpoints report; ``metrics`` counts requests (this layer) and what the service reports;
    ``exporters`` defaults to an ``ExporterManager`` over the service's store."""

    def __init__(self, parts: ApiParts, *, guard: ReadGuard | None = None) -> None:
        service = parts.service
        if service is None:
            raise ValueError("a RegistryApp answers from a service: ApiParts.service is required")
        health = parts.health
        if health is None:
            health = Health()
            health.serving = True
        self.health = health
        self.metrics = parts.metrics if parts.metrics is not None else Metrics()
        #: the schema exporters (``registry/exporters``; they run once whoever runs the app starts them)
        self.exporters = parts.exporters if parts.exporters is not None else ExporterManager(service.store)
        parts = replace(parts, health=self.health, metrics=self.metrics, exporters=self.exporters)
        self.service = service
        self.forwarder = parts.forwarder
        self.security = security = parts.security
        self.on_startup: list[Callable[[], Awaitable[None]]] = []
        self.on_shutdown: list[Callable[[], Awaitable[None]]] = []
        #: why the instance could not start (None: it did, or is still starting)
        self.failed: str | None = None
        #: stops the server (set by whoever runs the app; a no-op otherwise)
        self.stop: Callable[[], None] = lambda: None
        self.api = build_api(parts)
        ui.mount(self.api)
        if guard is None and security is not None:
            guard = SecurityGuard(security)
        self.api.router.lifespan_context = self._lifespan
        limits = service.limits
        super().__init__(
            StartupGate(KeepEncodedSlashes(self.api), self.health),
            service.state,
            guard=guard,
            requests=self.metrics.requests,
            max_bytes=limits.response_cache_bytes,
            query_names=query_parameter_names([*ROUTERS, operations.router, *ui.ROUTERS]),
            bodies=BodyLimits(limits.max_request_bytes, limits.body_timeout),
        )

    @asynccontextmanager
    async def _lifespan(self, _app: Any) -> AsyncIterator[None]:
        for fn in self.on_startup:
            await fn()
        yield
        for fn in self.on_shutdown:
            await fn()
