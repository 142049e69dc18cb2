"""Operations endpoints, not part of Confluent's API (so not in ``openapi.yaml``; the README lists them):

- ``GET /health/live``: 200 while the instance can go on (``registry/health.py``), else 503;
- ``GET /health/ready``: 200 once the log is replayed and (several instances) a leader is known, else 503;
- ``GET /_health``: Karapace's health document, for tooling written against Karapace;
- ``GET /metrics``: Prometheus text format (``registry/metrics.py``).

They answer during the startup replay too, whatever the ``Accept`` header (probes and scrapers send their
own), and are never cached.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request, Response

from registry import __version__
from registry.health import Health
from registry.http import render
from registry.metrics import CONTENT_TYPE

router = APIRouter(tags=["operations"], include_in_schema=False)
#: paths that answer before the state is ready to be read
PATHS = frozenset({"/health/live", "/health/ready", "/_health", "/metrics"})
JSON = "application/json"


def _status(problems: dict[str, str]) -> Response:
    body = {"status": "DOWN", "checks": problems} if problems else {"status": "UP"}
    return Response(render.dumps(body), 503 if problems else 200, media_type=JSON)


@router.get("/health/live")
async def live(request: Request) -> Response:
    health: Health = request.app.state.health
    return _status(health.unhealthy())


@router.get("/health/ready")
async def ready(request: Request) -> Response:
    health: Health = request.app.state.health
    return _status(health.not_ready())


@router.get("/_health")
async def karapace_health(request: Request) -> Response:
    """Karapace's ``/_health``: 200 with the document while healthy (ready or still starting), 503 (same
    document, ``healthy`` false) when the instance needs a restart."""
    state = request.app.state
    health: Health = state.health
    election = state.election
    is_primary: bool | None = True if election is None else (election.is_leader if election.eligible else None)
    end = await asyncio.to_thread(state.service.store.log_end)
    status = {
        "schema_registry_ready": health.ready,
        "schema_registry_startup_time_sec": health.replay_seconds if health.replay_seconds is not None else 0.0,
        "schema_registry_reader_current_offset": state.service.state.offset,
        "schema_registry_reader_highest_offset": end if end is not None else -1,
        "schema_registry_is_primary": is_primary,
        "schema_registry_is_primary_eligible": True if election is None else election.eligible,
        "schema_registry_primary_url": None if election is None else election.leader_url,
        "schema_registry_coordinator_running": election is not None and health.serving,
        "schema_registry_coordinator_generation_id": _generation(election),
    }
    healthy = health.live
    body: dict[str, Any] = {"karapace_version": __version__, "status": status, "healthy": healthy}
    return Response(render.dumps(body), 200 if healthy else 503, media_type=JSON)


def _generation(election: Any) -> int:
    leader = election.leader if election is not None else None
    return int(leader.generation) if leader is not None else -1


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    state = request.app.state
    end = await asyncio.to_thread(state.service.store.log_end)  # may ask the broker: off the loop
    return Response(state.metrics.render(log_end=end), media_type=CONTENT_TYPE)
