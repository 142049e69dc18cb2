"""``/schemas``: schemas by id, every schema, the schema types.

``by_id`` and ``by_guid`` hold the routes of one schema, under ``/schemas/ids/{id}`` and
``/schemas/guids/{guid}``: their dependency checks (with ``--auth``) that the caller may read a subject holding
it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response

from registry.http import render
from registry.http.errors import Doc
from registry.http.models import ContextId, Schema, SchemaString, SchemaTypeName, SubjectVersion
from registry.http.params import Deleted, Format, PageQuery, QueryBool, SchemaIdPath, ServiceDep
from registry.http.routing import SCHEMA_TEXT_DOC, RegistryRoute, ok
from registry.http.security import Readable, ReadSchemaGuid, ReadSchemaId
from registry.schema_types import schema_types
from registry.service import Service

router = APIRouter(route_class=RegistryRoute, tags=["schemas"])
by_id = APIRouter(prefix="/schemas/ids/{id}", route_class=RegistryRoute, tags=["schemas"], dependencies=[ReadSchemaId])
by_guid = APIRouter(
    prefix="/schemas/guids/{guid}", route_class=RegistryRoute, tags=["schemas"], dependencies=[ReadSchemaGuid]
)

SubjectContext = Annotated[
    str,
    Query(
        alias="subject",
        description="Look the id up in this subject's context (ids are per context): a qualified subject "
        "(`:.ctx:orders`) or a context (`:.ctx:`) names it; an unqualified subject that does not hold the id is "
        "looked for in every context. Without it: the default context.",
    ),
]
Guid = Annotated[str, Path(description="The schema's GUID (Confluent 8), as returned with its versions.")]


async def _schema_answer(
    service: Service, schema_id: int, context: str, fmt: str, fetch_max_id: bool = False
) -> Response:
    """The schema an id names, pre-rendered in the default format, else rendered in ``fmt`` (and with ``maxId``)."""
    content = service.schema(schema_id, context)
    if not fmt and not fetch_max_id:
        return ok(render.id_body(content))
    body = render.id_dict(content, await service.parser.formatted(content, schema_id, fmt, context))
    if fetch_max_id:
        body["maxId"] = service.max_id(context)
    return ok(render.dumps(body))


@router.get(
    "/schemas",
    operation_id="getSchemas",
    summary="Every version of every subject (matching the prefix), as Schema objects.",
    response_model=list[Schema],
)
async def list_schemas(
    service: ServiceDep,
    readable: Readable,
    page: PageQuery,
    subject_prefix: Annotated[
        str,
        Query(
            alias="subjectPrefix",
            description="Only subjects starting with this prefix. Empty (the default) or a prefix without a context "
            "means the default context; `:*:` every context, `:.ctx:` the context `.ctx`.",
        ),
    ] = "",
    deleted: Deleted = False,
    latest_only: Annotated[
        QueryBool, Query(alias="latestOnly", description="Only the latest version of each subject.")
    ] = False,
) -> Response:
    versions = service.all_schemas(subject_prefix, deleted=deleted, latest_only=latest_only)
    chosen = page.of([v for v in versions if readable(v.subject)])
    return ok(b"[" + b",".join(render.version_body(v) for v in chosen) + b"]")


@router.get(
    "/schemas/types",
    operation_id="getSchemaTypes",
    summary="The schema types this server supports.",
    response_model=list[SchemaTypeName],
)
async def get_schema_types() -> Response:
    return ok(render.dumps(schema_types()))


@by_id.get(
    "",
    operation_id="getSchemaById",
    summary="The schema with this id.",
    response_model=SchemaString,
    responses=Doc.reading_schema,
)
async def get_schema(
    service: ServiceDep,
    id: SchemaIdPath,
    fmt: Format = "",
    fetch_max_id: Annotated[
        QueryBool, Query(alias="fetchMaxId", description="Add `maxId`, the highest id in use in the context.")
    ] = False,
    subject: SubjectContext = "",
) -> Response:
    return await _schema_answer(service, id, service.id_context(id, subject), fmt, fetch_max_id)


@by_id.get(
    "/schema",
    operation_id="getSchemaTextById",
    summary="The schema text with this id, not wrapped in JSON.",
    response_model=None,
    responses={**SCHEMA_TEXT_DOC, **Doc.reading_schema},
)
async def get_schema_text(
    service: ServiceDep, id: SchemaIdPath, fmt: Format = "", subject: SubjectContext = ""
) -> Response:
    context = service.id_context(id, subject)
    return ok((await service.parser.formatted(service.schema(id, context), id, fmt, context)).encode())


def _holders_route(
    segment: str,
    *,
    operation_id: str,
    summary: str,
    response_model: Any,
    listed: Callable[[list[tuple[str, int]]], Any],
) -> None:
    """Declares ``/schemas/ids/{id}/<segment>``: one page of what ``listed`` makes of the (subject, version) pairs
    that hold the id, in the context ``?subject=`` selects, and that the caller may read."""

    @by_id.get(
        f"/{segment}",
        operation_id=operation_id,
        summary=summary,
        response_model=response_model,
        responses={**Doc.schema_not_found},
    )
    async def holders(
        service: ServiceDep,
        readable: Readable,
        id: SchemaIdPath,
        page: PageQuery,
        deleted: Deleted = False,
        subject: SubjectContext = "",
    ) -> Response:
        pairs = service.id_versions(id, deleted=deleted, context=service.id_context(id, subject))
        return ok(render.dumps(page.of(listed([p for p in pairs if readable(p[0])]))))


_holders_route(
    "subjects",
    operation_id="getSubjectsById",
    summary="Subjects that have a version with this id.",
    response_model=list[str],
    listed=lambda pairs: sorted({s for s, _ in pairs}),
)
_holders_route(
    "versions",
    operation_id="getVersionsById",
    summary="Subject-version pairs that hold this id.",
    response_model=list[SubjectVersion],
    listed=lambda pairs: [{"subject": s, "version": v} for s, v in pairs],
)


@by_guid.get(
    "",
    operation_id="getSchemaByGuid",
    summary="The schema with this GUID (Confluent 8).",
    response_model=SchemaString,
    responses=Doc.reading_schema,
)
async def get_schema_by_guid(service: ServiceDep, guid: Guid, fmt: Format = "") -> Response:
    context, schema_id = service.guid_ids(guid)[0]  # any context gives the same content
    return await _schema_answer(service, schema_id, context, fmt)


@by_guid.get(
    "/ids",
    operation_id="getIdsByGuid",
    summary="The ids of the schema with this GUID, one per context that has it (Confluent 8), the default first.",
    response_model=list[ContextId],
    responses={**Doc.schema_not_found},
)
async def get_ids_by_guid(service: ServiceDep, guid: Guid) -> Response:
    return ok(render.dumps([{"context": context, "id": schema_id} for context, schema_id in service.guid_ids(guid)]))
