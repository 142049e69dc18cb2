"""``/subjects``: list, look up, register, read and delete subject versions."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response

from registry import contexts
from registry.http import render
from registry.http.errors import Doc
from registry.http.models import RegisterSchemaRequest, RegisterSchemaResponse, Schema
from registry.http.params import (
    Deleted,
    Format,
    JsonBody,
    Normalize,
    PageQuery,
    QueryBool,
    ServiceDep,
    SubjectPath,
    VersionPath,
)
from registry.http.routing import SCHEMA_TEXT_DOC, RegistryRoute, cached_read, leader_only, ok
from registry.http.security import ImportIfId, Readable, ReadSubject, WriteSubject
from registry.service import Service
from registry.state import Version

router = APIRouter(route_class=RegistryRoute, tags=["subjects"])


async def _version_answer(service: Service, v: Version, fmt: str) -> Response:
    """A version in the default format (pre-rendered) or rendered in ``format``."""
    if not fmt:
        return ok(render.version_body(v))
    text = await service.parser.formatted(v.content, v.id, fmt, contexts.context_of(v.subject))
    return ok(render.dumps(render.version_dict(v, text)))


SchemaBody = Annotated[RegisterSchemaRequest, Depends(JsonBody(RegisterSchemaRequest))]
DeletedOnly = Annotated[
    QueryBool, Query(alias="deletedOnly", description="Only soft-deleted ones (wins over `deleted`).")
]
DeletedOnlySnake = Annotated[QueryBool, Query(alias="deleted_only", description="Alias of `deletedOnly`.")]
Permanent = Annotated[QueryBool, Query(description="Hard-delete (only what was soft-deleted before).")]


@router.get(
    "/subjects",
    operation_id="listSubjects",
    summary="Subject names, sorted ascending.",
    description="A subject whose versions are all soft-deleted is listed only with `deleted` or `deletedOnly`.",
    response_model=list[str],
)
async def list_subjects(
    service: ServiceDep,
    readable: Readable,
    page: PageQuery,
    subject_prefix: Annotated[
        str,
        Query(
            alias="subjectPrefix",
            description="Only subjects starting with this prefix. `:*:` (the default) means every context, "
            "`:*:abc` subjects starting with `abc` in any context, `:.ctx:` the context `.ctx`; a prefix without a "
            "context (the empty one too) means the default context.",
        ),
    ] = contexts.WILDCARD,
    deleted: Deleted = False,
    deleted_only: DeletedOnly = False,
    deleted_only_snake: DeletedOnlySnake = False,
) -> Response:
    subjects = service.list_subjects(subject_prefix, deleted=deleted, deleted_only=deleted_only or deleted_only_snake)
    return ok(render.dumps(page.of([s for s in subjects if readable(s)])))


@router.post(
    "/subjects/{subject}",
    operation_id="lookUpSchemaUnderSubject",
    dependencies=[ReadSubject],
    summary="Find the version of this subject that holds the given schema.",
    description="An empty schema matches nothing. A miss is 40401 when the subject has no versions (soft-deleted "
    "ones count only with `deleted`), else 40403.",
    response_model=Schema,
    responses={**Doc.subject_or_schema_not_found, **Doc.invalid_schema},
)
@cached_read
async def look_up(
    service: ServiceDep,
    subject: SubjectPath,
    body: SchemaBody,
    normalize: Normalize = None,
    deleted: Deleted = False,
    fmt: Format = "",
) -> Response:
    v = await service.lookup(subject, body.to_request(), normalize=normalize, deleted=deleted)
    return await _version_answer(service, v, fmt)


@router.delete(
    "/subjects/{subject}",
    operation_id="deleteSubject",
    dependencies=[WriteSubject],
    summary="Soft-delete a subject, or hard-delete a soft-deleted one with `permanent=true`.",
    response_model=list[int],
    responses={**Doc.delete_subject_not_found, **Doc.delete_not_permitted},
)
@leader_only
async def delete_subject(service: ServiceDep, subject: SubjectPath, permanent: Permanent = False) -> Response:
    return ok(render.dumps(await service.delete_subject(subject, permanent=permanent)))


@router.get(
    "/subjects/{subject}/versions",
    operation_id="listVersions",
    dependencies=[ReadSubject],
    summary="Version numbers of a subject, ascending by absolute value.",
    description="With `deletedAsNegative=true`, soft-deleted versions are included as negative numbers.",
    response_model=list[int],
    responses={**Doc.subject_not_found},
)
async def list_versions(
    service: ServiceDep,
    subject: SubjectPath,
    page: PageQuery,
    deleted: Deleted = False,
    deleted_only: DeletedOnly = False,
    deleted_only_snake: DeletedOnlySnake = False,
    deleted_as_negative: Annotated[
        QueryBool, Query(alias="deletedAsNegative", description="Include soft-deleted versions as negative numbers.")
    ] = False,
) -> Response:
    versions = service.list_versions(
        subject,
        deleted=deleted,
        deleted_only=deleted_only or deleted_only_snake,
        as_negative=deleted_as_negative,
    )
    return ok(render.dumps(page.of(versions)))


@router.post(
    "/subjects/{subject}/versions",
    operation_id="registerSchema",
    dependencies=[WriteSubject, ImportIfId],
    summary="Register a schema under a subject (or return the id it already has there).",
    description="An empty `schema` re-registers the latest version's schema. `id` (and `version`) are only "
    "allowed in IMPORT mode. `force=true` skips the compatibility check. The answer has the id, version and GUID, "
    "and the stored schema when the registry completed its metadata or rule set (config defaults and overrides, "
    "or the previous version's).",
    response_model=RegisterSchemaResponse,
    responses={**Doc.incompatible_schema, **Doc.register_unprocessable},
)
@leader_only
async def register(
    service: ServiceDep,
    subject: SubjectPath,
    body: SchemaBody,
    normalize: Normalize = None,
    force: Annotated[QueryBool, Query(description="Register without the compatibility check (Confluent 8.x).")] = False,
) -> Response:
    registered = await service.register(subject, body.to_request(check_rules=True), normalize=normalize, force=force)
    return ok(render.dumps(render.register_dict(registered)))


@router.get(
    "/subjects/{subject}/versions/{version}",
    operation_id="getSchemaByVersion",
    dependencies=[ReadSubject],
    summary="One version of a subject.",
    response_model=Schema,
    responses=Doc.reading_version,
)
async def get_version(
    service: ServiceDep, subject: SubjectPath, version: VersionPath, deleted: Deleted = False, fmt: Format = ""
) -> Response:
    v = service.get_version(subject, version, deleted=deleted, using_contexts=True)
    return await _version_answer(service, v, fmt)


@router.get(
    "/subjects/{subject}/versions/{version}/schema",
    operation_id="getSchemaOnly",
    dependencies=[ReadSubject],
    summary="The schema text of one version, not wrapped in JSON.",
    response_model=None,
    responses={**SCHEMA_TEXT_DOC, **Doc.reading_version},
)
async def get_version_schema(
    service: ServiceDep, subject: SubjectPath, version: VersionPath, deleted: Deleted = False, fmt: Format = ""
) -> Response:
    v = service.get_version(subject, version, deleted=deleted, using_contexts=True)
    return ok((await service.parser.formatted(v.content, v.id, fmt, contexts.context_of(v.subject))).encode())


@router.delete(
    "/subjects/{subject}/versions/{version}",
    operation_id="deleteSchemaVersion",
    dependencies=[WriteSubject],
    summary="Soft-delete a version, or hard-delete a soft-deleted one with `permanent=true`.",
    response_model=int,
    responses={**Doc.delete_version_not_found, **Doc.delete_version_not_permitted},
)
@leader_only
async def delete_version(
    service: ServiceDep, subject: SubjectPath, version: VersionPath, permanent: Permanent = False
) -> Response:
    return ok(render.dumps(await service.delete_version(subject, version, permanent=permanent)))


@router.get(
    "/subjects/{subject}/versions/{version}/referencedby",
    operation_id="getReferencedBy",
    dependencies=[ReadSubject],
    summary="Ids of the schemas that reference this version.",
    response_model=list[int],
    responses=Doc.reading_version,
)
async def referenced_by(
    service: ServiceDep,
    subject: SubjectPath,
    version: VersionPath,
    page: PageQuery,
    deleted: Deleted = False,
) -> Response:
    return ok(render.dumps(page.of(service.referenced_by(subject, version, deleted=deleted))))


@router.get(
    "/subjects/{subject}/metadata",
    operation_id="getLatestWithMetadata",
    dependencies=[ReadSubject],
    summary="The latest version whose `metadata.properties` hold every `key`=`value` pair given.",
    response_model=Schema,
    responses={**Doc.subject_or_schema_not_found, **Doc.stored_schema_unparsable},
)
async def latest_with_metadata(
    service: ServiceDep,
    subject: SubjectPath,
    key: Annotated[
        list[str], Query(description="A metadata property name; repeatable, paired with `value` by position.")
    ] = [],  # noqa: B006 (FastAPI copies defaults per request)
    value: Annotated[
        list[str], Query(description="The value the property named by the `key` at the same position must have.")
    ] = [],  # noqa: B006
    deleted: Deleted = False,
    fmt: Format = "",
) -> Response:
    v = service.latest_with_metadata(subject, key, value, deleted=deleted)
    return await _version_answer(service, v, fmt)
