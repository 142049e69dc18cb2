"""One router per resource of Confluent's API; ``ROUTERS`` is the order they are mounted in."""

from __future__ import annotations

from registry.http.routers import compatibility, config, contexts, metadata, mode, schemas, subjects
from registry.http.routing import RegistryRoute

ROUTERS = [
    subjects.router,
    schemas.router,
    config.router,
    mode.router,
    compatibility.router,
    contexts.router,
    metadata.router,
]


def api_routes() -> list[RegistryRoute]:
    """Every API route (the app mounts the routers; these are the routes as declared)."""
    return [r for router in ROUTERS for r in router.routes if isinstance(r, RegistryRoute)]
