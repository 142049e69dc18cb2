"""The server itself: the root (a liveness probe), ``/v1/metadata`` (cluster id, version), and Confluent 8.x
``/associations``, which this registry does not keep (every lookup answers 40410)."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import unquote

from fastapi import APIRouter, Path, Request, Response

from registry import __version__, build_info, errors
from registry.http import render
from registry.http.errors import Doc
from registry.http.models import EmptyObject, SchemaRegistryServerVersion, ServerClusterId
from registry.http.routing import JSON_TYPES, RegistryRoute, ok

router = APIRouter(route_class=RegistryRoute, tags=["server"])


@router.get("/", operation_id="getRoot", summary="Liveness probe.", response_model=EmptyObject)
async def root() -> Response:
    return ok(b"{}")


@router.post(
    "/",
    operation_id="postRoot",
    summary="Accepts any body and answers `{}` (Confluent's root POST).",
    response_model=EmptyObject,
    openapi_extra={"requestBody": {"required": False, "content": {t: {"schema": {}} for t in JSON_TYPES}}},
)
async def root_post() -> Response:
    return ok(b"{}")


@router.get("/v1/metadata/id", operation_id="getClusterId", summary="Cluster ids.", response_model=ServerClusterId)
async def cluster_id(request: Request) -> Response:
    clusters = {"kafka-cluster": request.app.state.cluster_id, "schema-registry-cluster": "schema-registry"}
    return ok(render.dumps({"scope": {"path": [], "clusters": clusters}}))


@router.get(
    "/v1/metadata/version",
    operation_id="getSchemaRegistryVersion",
    summary="Server version and commit.",
    response_model=SchemaRegistryServerVersion,
)
async def server_version() -> Response:
    return ok(render.dumps({"version": __version__, "commitId": build_info.commit_id()}))


@router.get(
    "/associations/{resource:path}",
    operation_id="getAssociations",
    summary="Confluent 8.x associations are not supported; every lookup answers 40410.",
    response_model=None,
    status_code=404,  # the only answer
    responses={**Doc.association_not_found},
)
async def associations(
    resource: Annotated[str, Path(description="Any resource; deeper `/associations/...` paths answer the same way.")],
) -> Response:
    raise errors.association_not_found(unquote(resource.rsplit("/", 1)[-1]))
