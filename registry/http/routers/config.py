"""``/config``: the global and per-subject compatibility config."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response

from registry.http import render
from registry.http.errors import Doc
from registry.http.models import Config, ConfigUpdateRequest, ConfigUpdateResponse, config_echo
from registry.http.params import DefaultToGlobal, JsonBody, ServiceDep, SubjectPath
from registry.http.routing import RegistryRoute, leader_only, ok
from registry.http.security import ReadConfig, ReadSubject, WriteConfig, WriteSubject
from registry.service import Service

router = APIRouter(route_class=RegistryRoute, tags=["config"])

ConfigBody = Annotated[ConfigUpdateRequest, Depends(JsonBody(ConfigUpdateRequest))]


async def _update(service: Service, subject: str | None, body: ConfigUpdateRequest) -> Response:
    """Sets the fields the body names (globally when ``subject`` is None) and answers with them."""
    update = body.to_update()
    await service.put_config(subject, update)
    return ok(render.dumps(config_echo(update)))


@router.get(
    "/config",
    operation_id="getTopLevelConfig",
    dependencies=[ReadConfig],
    summary="The global config (the server default level when none was set).",
    response_model=Config,
)
async def get_global_config(service: ServiceDep) -> Response:
    return ok(render.dumps(service.settings.get_config(None, default_to_global=True)))


@router.put(
    "/config",
    operation_id="updateTopLevelConfig",
    dependencies=[WriteConfig],
    summary="Update the global config; answers with the fields that were set.",
    response_model=ConfigUpdateResponse,
    responses={**Doc.config_unprocessable},
)
@leader_only
async def put_global_config(service: ServiceDep, body: ConfigBody) -> Response:
    return await _update(service, None, body)


@router.delete(
    "/config",
    operation_id="deleteTopLevelConfig",
    dependencies=[WriteConfig],
    summary="Remove the global config; answers with the config in force before.",
    response_model=Config,
    responses={**Doc.read_only},
)
@leader_only
async def delete_global_config(service: ServiceDep) -> Response:
    return ok(render.dumps(await service.delete_config(None)))


@router.get(
    "/config/{subject}",
    operation_id="getSubjectLevelConfig",
    dependencies=[ReadSubject],
    summary="A subject's config (merged over the global one).",
    response_model=Config,
    responses={**Doc.subject_config_not_found},
)
async def get_config(service: ServiceDep, subject: SubjectPath, default_to_global: DefaultToGlobal = False) -> Response:
    return ok(render.dumps(service.settings.get_config(subject, default_to_global=default_to_global)))


@router.put(
    "/config/{subject}",
    operation_id="updateSubjectLevelConfig",
    dependencies=[WriteSubject],
    summary="Update a subject's config; answers with the fields that were set.",
    response_model=ConfigUpdateResponse,
    responses={**Doc.config_unprocessable},
)
@leader_only
async def put_config(service: ServiceDep, subject: SubjectPath, body: ConfigBody) -> Response:
    return await _update(service, subject, body)


@router.delete(
    "/config/{subject}",
    operation_id="deleteSubjectConfig",
    dependencies=[WriteSubject],
    summary="Remove a subject's config; answers with the config in force before.",
    response_model=Config,
    responses={**Doc.subject_not_found, **Doc.read_only},
)
@leader_only
async def delete_config(service: ServiceDep, subject: SubjectPath) -> Response:
    return ok(render.dumps(await service.delete_config(subject)))
