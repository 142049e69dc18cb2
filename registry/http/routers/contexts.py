"""``/contexts``: the contexts (Confluent's namespaces of subjects and ids, ``registry/contexts.py``)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import unquote

from fastapi import APIRouter, Query, Response

from registry import contexts, errors
from registry.http import render
from registry.http.errors import Doc
from registry.http.params import ContextPath, Limit, Offset, ServiceDep
from registry.http.routing import RegistryRoute, leader_only, ok
from registry.http.security import WriteContext

router = APIRouter(route_class=RegistryRoute, tags=["contexts"])


@router.get(
    "/contexts",
    operation_id="listContexts",
    summary="The contexts, sorted: the default context `.` first, then every context a subject was registered in "
    "(until the context is deleted).",
    response_model=list[str],
)
async def list_contexts(
    service: ServiceDep,
    offset: Offset = 0,
    limit: Limit = -1,
    context_prefix: Annotated[
        str, Query(alias="contextPrefix", description="Only contexts starting with this prefix (case-sensitive).")
    ] = "",
) -> Response:
    return ok(render.dumps(render.page(service.list_contexts(context_prefix), offset, limit)))


@router.delete(
    "/contexts/{context}",
    operation_id="deleteContext",
    summary="Delete a context that has no subjects left (soft-deleted ones count: hard-delete them first).",
    status_code=204,
    response_model=None,
    responses={204: {"description": "Deleted (or there was no such context)."}, **Doc.context_not_empty},
    dependencies=[WriteContext],
)
@leader_only
async def delete_context(
    service: ServiceDep,
    context: ContextPath,
) -> Response:
    try:
        name = contexts.parse_context(unquote(context))
    except ValueError as e:
        raise errors.bad_request(str(e)) from None
    await service.delete_context(name)
    return Response(status_code=204)
