"""The server itself: the root (a liveness probe) and ``/v1/metadata`` (cluster id, version)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from registry import __version__, build_info
from registry.http import render
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
