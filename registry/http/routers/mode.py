"""``/mode``: the global and per-subject mode (READWRITE, READONLY, IMPORT, FORWARD)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response

from registry.http import render
from registry.http.errors import Doc
from registry.http.models import ModeResponse, ModeUpdateRequest
from registry.http.params import DefaultToGlobal, JsonBody, QueryBool, ServiceDep, SubjectPath
from registry.http.routing import RegistryRoute, leader_only, ok
from registry.http.security import ReadConfig, ReadSubject, WriteMode, WriteSubject

router = APIRouter(route_class=RegistryRoute, tags=["mode"])

ModeBody = Annotated[ModeUpdateRequest, Depends(JsonBody(ModeUpdateRequest))]
Force = Annotated[QueryBool, Query(description="Allow IMPORT while subjects have live versions.")]


def _mode(mode: str) -> Response:
    return ok(render.dumps({"mode": mode}))


@router.get(
    "/mode",
    operation_id="getTopLevelMode",
    dependencies=[ReadConfig],
    summary="The global mode (READWRITE when none was set).",
    response_model=ModeResponse,
)
async def get_global_mode(service: ServiceDep) -> Response:
    return _mode(service.settings.get_mode(None, default_to_global=True))


@router.put(
    "/mode",
    operation_id="updateTopLevelMode",
    dependencies=[WriteMode],
    summary="Set the global mode.",
    description="IMPORT is refused (42205) while any subject has a live version, unless `force=true`.",
    response_model=ModeResponse,
    responses={**Doc.mode_unprocessable},
)
@leader_only
async def put_global_mode(service: ServiceDep, body: ModeBody, force: Force = False) -> Response:
    return _mode(await service.put_mode(None, body.to_mode(), force=force))


@router.delete(
    "/mode",
    operation_id="deleteTopLevelMode",
    dependencies=[WriteMode],
    summary="Remove the global mode; answers with the mode in force before.",
    response_model=ModeResponse,
)
@leader_only
async def delete_global_mode(service: ServiceDep) -> Response:
    return _mode(await service.delete_mode(None))


@router.get(
    "/mode/{subject}",
    operation_id="getSubjectMode",
    dependencies=[ReadSubject],
    summary="A subject's mode.",
    response_model=ModeResponse,
    responses={**Doc.subject_mode_not_found},
)
async def get_mode(service: ServiceDep, subject: SubjectPath, default_to_global: DefaultToGlobal = False) -> Response:
    return _mode(service.settings.get_mode(subject, default_to_global=default_to_global))


@router.put(
    "/mode/{subject}",
    operation_id="updateSubjectMode",
    dependencies=[WriteSubject],
    summary="Set a subject's mode (FORWARD is global only).",
    description="IMPORT is refused (42205) while the subject has a live version, unless `force=true`.",
    response_model=ModeResponse,
    responses={**Doc.mode_unprocessable},
)
@leader_only
async def put_mode(service: ServiceDep, subject: SubjectPath, body: ModeBody, force: Force = False) -> Response:
    return _mode(await service.put_mode(subject, body.to_mode(), force=force))


@router.delete(
    "/mode/{subject}",
    operation_id="deleteSubjectMode",
    dependencies=[WriteSubject],
    summary="Remove a subject's mode; answers with the mode in force before.",
    response_model=ModeResponse,
    responses={**Doc.subject_not_found},
)
@leader_only
async def delete_mode(service: ServiceDep, subject: SubjectPath) -> Response:
    return _mode(await service.delete_mode(subject))
