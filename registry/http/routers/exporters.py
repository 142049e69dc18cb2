"""``/exporters``: Confluent's schema exporters (schema linking), with its request and answer shapes and error
codes. Definitions are read on any instance (they are in ``_schemas``); changes, and ``/status`` (the runners
live on the leader), are the leader's. Every route needs ``Write`` on ``Exporter:`` (``ManageExporters``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response
from pydantic import BaseModel, Field, RootModel, StrictStr

from registry.exporters import ExporterDefinition, ExporterManager
from registry.exporters.definition import AUTO, CONTEXT_TYPES, check_name
from registry.http import render
from registry.http.errors import Doc
from registry.http.models import enum_of
from registry.http.params import JsonBody
from registry.http.routing import RegistryRoute, leader_only, live_read, ok
from registry.http.security import ManageExporters

router = APIRouter(route_class=RegistryRoute, tags=["exporters"], dependencies=[ManageExporters])

ContextType = Annotated[StrictStr, enum_of(list(CONTEXT_TYPES))]
Subjects = Field(None, description="Subject patterns (`*`, `?` wildcards; `:.ctx:*` a context; `:*:` everything).")
RenameFormat = Field(None, description="The destination subject; `${subject}` stands for the source subject.")
ConfigMap = Field(
    None,
    description="The destination: `schema.registry.url`, `basic.auth.user.info`, `bearer.auth.token`, "
    "`schema.registry.ssl.ca.location`/`certificate.location`/`key.location`.",
)


class ExporterUpdateRequest(BaseModel):
    contextType: ContextType | None = None
    context: StrictStr | None = None
    subjects: list[StrictStr] | None = Subjects
    subjectRenameFormat: StrictStr | None = RenameFormat
    config: dict[str, StrictStr] | None = ConfigMap


class ExporterRequest(ExporterUpdateRequest):
    name: StrictStr | None = None

    def to_definition(self, source_id: str) -> ExporterDefinition:
        check_name(self.name)
        assert self.name is not None
        return ExporterDefinition(
            name=self.name,
            config=dict(self.config or {}),
            context_type=self.contextType or AUTO,
            context=self.context,
            subjects=tuple(self.subjects) if self.subjects is not None else ("*",),
            subject_rename_format=self.subjectRenameFormat,
            source_id=source_id,
        )


class ExporterConfigRequest(RootModel[dict[str, StrictStr]]):
    """Destination settings to change (each replaces the key of the same name)."""


class ExporterReference(BaseModel):
    name: str


class ExporterResponse(BaseModel):
    name: str
    subjects: list[str]
    contextType: str
    context: str
    subjectRenameFormat: str
    config: dict[str, str]


class ExporterStatusResponse(BaseModel):
    name: str
    state: str = Field(description="STARTING, RUNNING, PAUSED or ERROR.")
    offset: int = Field(description="Offset in `_schemas` of the last record done (-1: none).")
    ts: int = Field(description="Timestamp (ms) of that record.")
    trace: str | None = Field(None, description="Why the exporter is in ERROR.")
    lagRecords: int = Field(description="`_schemas` records not yet exported.")
    lagSeconds: float = Field(description="How long the oldest of them has waited.")
    lastError: str | None = Field(None, description="The last failure, kept after recovering.")
    lastErrorTs: int | None = Field(None, description="When it happened (ms since the epoch).")
    recordsExported: int = Field(description="Records exported since this instance led.")
    errors: int = Field(description="Failed destination calls since this instance led.")


async def _manager(request: Request) -> ExporterManager:
    manager: ExporterManager = request.app.state.exporters
    return manager


Manager = Annotated[ExporterManager, Depends(_manager)]
Name = Annotated[str, Path(description="The exporter's name.")]
CreateBody = Annotated[ExporterRequest, Depends(JsonBody(ExporterRequest))]
UpdateBody = Annotated[ExporterUpdateRequest, Depends(JsonBody(ExporterUpdateRequest))]
ConfigBody = Annotated[ExporterConfigRequest, Depends(JsonBody(ExporterConfigRequest))]


def _named(name: str) -> Response:
    return ok(render.dumps({"name": name}))


@router.get("/exporters", operation_id="listExporters", summary="The exporters' names.", response_model=list[str])
async def list_exporters(manager: Manager) -> Response:
    return ok(render.dumps(manager.names()))


@router.post(
    "/exporters",
    operation_id="registerExporter",
    summary="Create an exporter; it starts at once.",
    response_model=ExporterReference,
    responses={**Doc.exporter_invalid, **Doc.wrong_field_type},
)
@leader_only
async def create_exporter(manager: Manager, body: CreateBody) -> Response:
    definition = body.to_definition(manager.source_id)
    await manager.create(definition)
    return _named(definition.name)


@router.get(
    "/exporters/{name}",
    operation_id="getExporterInfoByName",
    summary="An exporter's definition.",
    response_model=ExporterResponse,
    responses={**Doc.exporter_not_found},
)
async def get_exporter(manager: Manager, name: Name) -> Response:
    return ok(render.dumps(manager.get(name).to_json()))


@router.put(
    "/exporters/{name}",
    operation_id="updateExporterInfo",
    summary="Change a paused exporter (the fields given; `config` merged key by key).",
    response_model=ExporterReference,
    responses={**Doc.exporter_not_found, **Doc.exporter_not_paused, **Doc.wrong_field_type},
)
@leader_only
async def update_exporter(manager: Manager, name: Name, body: UpdateBody) -> Response:
    await manager.update(name, body.model_dump(exclude_none=True))
    return _named(name)


@router.delete(
    "/exporters/{name}",
    operation_id="deleteExporter",
    summary="Stop and delete an exporter (what it exported stays at the destination).",
    status_code=204,
    response_model=None,
    responses={**Doc.exporter_not_found},
)
@leader_only
async def delete_exporter(manager: Manager, name: Name) -> Response:
    await manager.delete(name)
    return Response(status_code=204)


@router.get(
    "/exporters/{name}/status",
    operation_id="getExporterStatusByName",
    summary="An exporter's state, position, lag and last error (answered by the leader).",
    response_model=ExporterStatusResponse,
    responses={**Doc.exporter_not_found},
)
@leader_only
@live_read
async def exporter_status(manager: Manager, name: Name) -> Response:
    return ok(render.dumps(manager.status(name)))


@router.get(
    "/exporters/{name}/config",
    operation_id="getExporterConfigByName",
    summary="An exporter's destination config.",
    response_model=dict[str, str],
    responses={**Doc.exporter_not_found},
)
async def exporter_config(manager: Manager, name: Name) -> Response:
    return ok(render.dumps(manager.get(name).config))


@router.put(
    "/exporters/{name}/config",
    operation_id="updateExporterConfigByName",
    summary="Change a paused exporter's destination config (merged key by key).",
    response_model=ExporterReference,
    responses={**Doc.exporter_not_found, **Doc.exporter_not_paused, **Doc.wrong_field_type},
)
@leader_only
async def update_exporter_config(manager: Manager, name: Name, body: ConfigBody) -> Response:
    await manager.update(name, {"config": body.root})
    return _named(name)


@router.put(
    "/exporters/{name}/pause",
    operation_id="pauseExporterByName",
    summary="Pause an exporter (where it got to is kept).",
    response_model=ExporterReference,
    responses={**Doc.exporter_not_found},
)
@leader_only
async def pause_exporter(manager: Manager, name: Name) -> Response:
    await manager.pause(name)
    return _named(name)


@router.put(
    "/exporters/{name}/resume",
    operation_id="resumeExporterByName",
    summary="Resume a paused exporter where it stopped.",
    response_model=ExporterReference,
    responses={**Doc.exporter_not_found, **Doc.exporter_running},
)
@leader_only
async def resume_exporter(manager: Manager, name: Name) -> Response:
    await manager.resume(name)
    return _named(name)


@router.put(
    "/exporters/{name}/reset",
    operation_id="resetExporterByName",
    summary="Start a paused exporter over from the beginning of the log when it resumes.",
    response_model=ExporterReference,
    responses={**Doc.exporter_not_found, **Doc.exporter_not_paused},
)
@leader_only
async def reset_exporter(manager: Manager, name: Name) -> Response:
    await manager.reset(name)
    return _named(name)
