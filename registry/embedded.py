"""The registry in-process, for unit tests: ``RegistryClient("mock://")`` talks to it.

``EmbeddedRegistry`` runs the real service and HTTP app (the same compatibility rules, error codes and answers as
the server) on a private in-memory SQLite log (``sqlite:///:memory:NAME``: no file), with no port: requests go
to the ASGI app through an httpx transport. The app's event loop runs in one thread of its own, so sync and async
clients share it; that thread is stopped and the log dropped when the registry is closed (with the last client
using it).

serdes finds it through the ``schemakit.registry_transports`` entry point (serdes may not import ``registry``):
``mock://`` alone gives a fresh registry per client, ``mock://name`` the same one to every client naming it, until
they are all closed.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx

from registry.config import RegistryConfig
from registry.server import build_app, check_topics
from streams.log import open_log
from streams.log.shared import SharedByName

__all__ = ["EmbeddedRegistry", "transport"]

T = TypeVar("T")
log = logging.getLogger(__name__)


class EmbeddedRegistry:
    """One in-process registry; ``open()`` starts it, ``close()`` stops its thread and removes its log."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        url = f"sqlite:///:memory:mock-registry-{uuid.uuid4().hex}"
        # A named in-memory log lives while one of its users is open: this one keeps it from check_topics on,
        # which opens and closes its own.
        self._log = open_log(url)
        config = RegistryConfig(log_url=url, advertised_url="http://mock")
        check_topics(config)
        self.app = build_app(config)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"mock-registry-{name or 'anon'}", daemon=True
        )
        self._thread.start()
        self._lifespan: asyncio.Future[Any] | None = None
        self._started: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self.run(self._start())
        self._asgi = httpx.ASGITransport(app=self.app)  # type: ignore[arg-type]  # scope typed as dict there

    async def _start(self) -> None:
        self._started, self._stop = asyncio.Event(), asyncio.Event()
        self._lifespan = asyncio.ensure_future(self._serve_lifespan())
        await self._started.wait()
        if self._lifespan.done():
            self._lifespan.result()  # startup failed: raise it here
        # the replay of the (empty) log runs in the background: answer only once the registry serves
        while not self.app.health.serving:
            why = self.app.failed or self.app.health.unhealthy()
            if why:
                raise RuntimeError(f"the in-process registry did not start: {why}")
            await asyncio.sleep(0.005)

    async def _serve_lifespan(self) -> None:
        assert self._started is not None and self._stop is not None
        async with self.app.api.router.lifespan_context(self.app.api):
            self._started.set()
            await self._stop.wait()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the registry's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def handle(self, request: httpx.Request) -> httpx.Response:
        """One request through the ASGI app, on the registry's loop (from any thread or loop)."""
        content = await request.aread()
        forwarded = httpx.Request(request.method, request.url, headers=request.headers, content=content)
        future = asyncio.run_coroutine_threadsafe(self._handle(forwarded), self._loop)
        status, headers, body = await asyncio.wrap_future(future)
        return httpx.Response(status, headers=headers, content=body, request=request)

    def handle_sync(self, request: httpx.Request) -> httpx.Response:
        forwarded = httpx.Request(request.method, request.url, headers=request.headers, content=request.read())
        status, headers, body = self.run(self._handle(forwarded))
        return httpx.Response(status, headers=headers, content=body, request=request)

    async def _handle(self, request: httpx.Request) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        response = await self._asgi.handle_async_request(request)
        body = await response.aread()
        return response.status_code, response.headers.raw, body

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        stop = self._stop

        async def finish() -> None:
            if stop is not None:
                stop.set()
            if self._lifespan is not None:
                await self._lifespan
            # join the workers of the loop's default executor: loop.close() alone does not wait for them
            await asyncio.get_running_loop().shutdown_default_executor()

        try:
            self.run(finish())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            self._loop.close()
            self._log.close()


#: the in-process registries, one per ``mock://name`` while a client of that name is open (``mock://``: its own)
_registries: SharedByName[EmbeddedRegistry] = SharedByName(EmbeddedRegistry, EmbeddedRegistry.close)


class _SyncTransport(httpx.BaseTransport):
    def __init__(self, registry: EmbeddedRegistry) -> None:
        self.registry = registry
        self._closed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.registry.handle_sync(request)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            _registries.release(self.registry)


class _AsyncTransport(httpx.AsyncBaseTransport):
    def __init__(self, registry: EmbeddedRegistry) -> None:
        self.registry = registry
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.registry.handle(request)

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await asyncio.to_thread(_registries.release, self.registry)


def transport(url: str, is_async: bool) -> httpx.BaseTransport | httpx.AsyncBaseTransport:
    """The httpx transport for a ``mock://[name]`` URL (the ``schemakit.registry_transports`` entry point)."""
    name = url.partition("://")[2].strip("/")
    registry = _registries.claim(name)
    return _AsyncTransport(registry) if is_async else _SyncTransport(registry)
