"""``/contexts``: only the default context ``.`` exists."""

from __future__ import annotations

from fastapi import APIRouter, Response

from registry.http import render
from registry.http.errors import Doc
from registry.http.params import Limit, Offset
from registry.http.routing import RegistryRoute, ok

router = APIRouter(route_class=RegistryRoute, tags=["contexts"])


@router.get(
    "/contexts",
    operation_id="listContexts",
    summary="Contexts; only the default context `.` exists.",
    response_model=list[str],
    responses={**Doc.bad_request},
)
async def list_contexts(offset: Offset = 0, limit: Limit = -1) -> Response:
    return ok(render.dumps(render.page(["."], offset, limit)))
