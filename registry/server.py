"""Wiring: log backend → store → service → ASGI app → uvicorn, with startup logging."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import uvicorn

from registry import __version__
from registry.app import RegistryApp
from registry.schema_types import schema_types
from registry.service import Service
from registry.store import Store
from streams.log import Log, open_log

log = logging.getLogger("registry")


@dataclass
class Settings:
    log_url: str = "sqlite:///./data"
    host: str = "127.0.0.1"
    port: int = 8081
    topic: str = "_schemas"
    advertised_url: str | None = None
    leader_eligible: bool = True
    compatibility: str = "BACKWARD"
    store_timeout: float = 10.0

    @property
    def url(self) -> str:
        return self.advertised_url or f"http://{self.host}:{self.port}"


def describe_backend(log_backend: Log) -> str:
    where = getattr(log_backend, "path", None)
    if where is not None:
        return f"sqlite (embedded), data at {where}"
    return f"kafka, bootstrap {getattr(log_backend, 'bootstrap', log_backend.url)}"


def build_app(settings: Settings) -> RegistryApp:
    log_backend = open_log(settings.log_url)
    store = Store(log_backend, settings.topic, timeout=settings.store_timeout)
    service = Service(store, default_compatibility=settings.compatibility)
    app = RegistryApp(service)

    async def startup() -> None:
        log.info("schemakit registry %s: log backend %s", __version__, describe_backend(log_backend))
        log.info("schema types: %s", ", ".join(schema_types()))
        await asyncio.to_thread(store.open)
        store.start(asyncio.get_running_loop())
        if settings.log_url.startswith("sqlite"):
            log.info("leader: this node (single-node embedded log)")
        log.info("serving the Confluent Schema Registry API at %s", settings.url)

    async def shutdown() -> None:
        store.close()
        log_backend.close()
        log.info("stopped")

    app.on_startup.append(startup)
    app.on_shutdown.append(shutdown)
    return app


def serve(settings: Settings) -> None:
    app = build_app(settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        lifespan="on",
        access_log=False,
        log_level="warning",
        loop="auto",
        http="auto",
        timeout_keep_alive=30,
    )
    uvicorn.Server(config).run()
