"""One router per resource of Confluent's API (and per part of one whose routes share a dependency, such as
``schemas.by_id``); ``ROUTERS`` is the order they are mounted in, which is the order of ``openapi.yaml``."""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import APIRouter
from fastapi.routing import APIRoute

from registry.http.routers import (
    associations,
    compatibility,
    config,
    contexts,
    dek_registry,
    exporters,
    metadata,
    mode,
    schemas,
    subjects,
)
from registry.http.routing import RegistryRoute, query_params

ROUTERS = [
    subjects.router,
    schemas.router,
    schemas.by_id,
    schemas.by_guid,
    config.router,
    mode.router,
    compatibility.router,
    contexts.router,
    exporters.router,
    metadata.router,
    associations.router,
    dek_registry.router,
]


def api_routes() -> list[RegistryRoute]:
    """Every API route (the app mounts the routers; these are the routes as declared)."""
    return [r for router in ROUTERS for r in router.routes if isinstance(r, RegistryRoute)]


def query_parameter_names(routers: Iterable[APIRouter] = ROUTERS) -> frozenset[str]:
    """The query parameters some route of ``routers`` reads; the read cache keys answers by these only, so it
    must be given every router whose answers it keeps (the schema browser's too)."""
    routes = [r for router in routers for r in router.routes if isinstance(r, APIRoute)]
    return frozenset(p.alias for r in routes for p in query_params(r.dependant))
