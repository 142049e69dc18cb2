"""``/associations``: Confluent 8's topic-subject associations (``registry/associations.py`` has the rules), with
its request and answer shapes and error codes. Writes are the leader's (``@leader_only``) and need ``Write`` on
every subject they name; lookups list only the associations of subjects the caller may read."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import unquote

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from pydantic import BaseModel, Field, StrictBool, StrictStr

from registry import contexts, errors
from registry.associations import (
    DEFAULT_ASSOCIATION_TYPE,
    DEFAULT_RESOURCE_TYPE,
    Associations,
    Lookup,
    Resource,
    Wanted,
)
from registry.http import render
from registry.http.errors import Doc
from registry.http.models import RegisterSchemaRequest, Schema
from registry.http.params import JsonBody, Page, PageQuery, QueryBool, ServiceDep, SubjectPath
from registry.http.routing import RegistryRoute, leader_only, ok
from registry.http.security import Readable, check, principal_of
from registry.security import Operation
from registry.security.permissions import subject_resource
from registry.service import Service, check_subject

router = APIRouter(route_class=RegistryRoute, tags=["associations"])

LIFECYCLE_DOC = "`STRONG` (the association owns its subject) or `WEAK` (the default)."


class AssociationCreateOrUpdateInfo(BaseModel):
    subject: StrictStr | None = None
    associationType: StrictStr | None = Field(None, description="`key` or `value` (the default).")
    lifecycle: StrictStr | None = Field(None, description=LIFECYCLE_DOC)
    frozen: StrictBool | None = Field(None, description="A strong association that cannot change.")
    schema_: RegisterSchemaRequest | None = Field(None, alias="schema", description="Registered under `subject`.")
    normalize: StrictBool | None = None


class AssociationCreateOrUpdateRequest(BaseModel):
    resourceName: StrictStr | None = Field(None, description="The topic.")
    resourceNamespace: StrictStr | None = Field(None, description="The Kafka cluster id.")
    resourceId: StrictStr | None = Field(None, description="The topic's id.")
    resourceType: StrictStr | None = Field(None, description="`topic` (the default).")
    associations: list[AssociationCreateOrUpdateInfo] | None = None


class Association(BaseModel):
    subject: str
    guid: str
    resourceName: str
    resourceNamespace: str
    resourceId: str
    resourceType: str
    associationType: str
    lifecycle: str = Field(description=LIFECYCLE_DOC)
    frozen: bool


class AssociationInfo(BaseModel):
    subject: str
    associationType: str
    lifecycle: str
    frozen: bool
    schema_: Schema | None = Field(None, alias="schema", description="The version the request's schema is.")


class AssociationResponse(BaseModel):
    resourceName: str
    resourceNamespace: str
    resourceId: str
    resourceType: str
    associations: list[AssociationInfo]


Body = Annotated[AssociationCreateOrUpdateRequest, Depends(JsonBody(AssociationCreateOrUpdateRequest))]
ResourceType = Annotated[str | None, Query(alias="resourceType", description="`topic` (the default).")]
AssociationTypes = Annotated[
    list[str] | None, Query(alias="associationType", description="`key` or `value`; repeatable; all when absent.")
]
Lifecycle = Annotated[str | None, Query(description="Only `STRONG` or only `WEAK` associations.")]


async def _lookup(
    resource_type: ResourceType = None, association_types: AssociationTypes = None, lifecycle: Lifecycle = None
) -> Lookup:
    return Lookup(resource_type or DEFAULT_RESOURCE_TYPE, association_types, lifecycle)


#: a lookup's filters: ``?resourceType=``, ``?associationType=`` (repeatable), ``?lifecycle=``
LookupQuery = Annotated[Lookup, Depends(_lookup)]


def _associations(service: Service) -> Associations:
    return service.associations


async def _require_write(request: Request, subjects: list[str]) -> None:
    """``Write`` on every subject the write names (403 on the first denied)."""
    principal = await principal_of(request)
    if principal is None:
        return
    for subject in sorted(set(subjects)):
        resource = subject_resource(subject)
        check(request, principal, Operation.WRITE, (resource,), resource)


def _wanted(body: AssociationCreateOrUpdateRequest) -> list[Wanted]:
    wanted = []
    for info in body.associations or ():
        subject = contexts.normalize(info.subject or "")
        if subject:
            check_subject(subject)
        wanted.append(
            Wanted(
                subject=subject,
                association_type=info.associationType or DEFAULT_ASSOCIATION_TYPE,
                lifecycle=info.lifecycle,
                frozen=info.frozen,
                with_schema=info.schema_ is not None,
            )
        )
    return wanted


def _listed(values: list[dict[str, Any]], readable: Any, page: Page) -> Response:
    return ok(render.dumps(page.of([v for v in values if readable(v.get("subject", ""))])))


async def _create_or_update(
    request: Request, service: Service, body: AssociationCreateOrUpdateRequest, *, create_only: bool
) -> Response:
    resource = Resource(
        name=body.resourceName or "",
        namespace=body.resourceNamespace or "",
        id=body.resourceId or "",
        type=body.resourceType or DEFAULT_RESOURCE_TYPE,
    )
    wanted = _wanted(body)
    await _require_write(request, [w.subject for w in wanted if w.subject])
    infos = body.associations or []
    associations = _associations(service)
    async with associations.lock:
        await associations.catch_up()
        olds = associations.check(resource, wanted, create_only=create_only)
        schemas: list[dict[str, Any] | None] = []
        for w, info, old in zip(wanted, infos, olds, strict=True):
            if info.schema_ is None:
                schemas.append(None)
                continue
            schema_request = info.schema_.to_request(check_rules=True)
            if create_only and old is not None:  # an equal association: only if the schema is already there
                try:
                    await service.lookup(w.subject, schema_request, normalize=info.normalize, deleted=False)
                except errors.ApiError:
                    raise errors.association_for_resource_exists(w.association_type, resource.id) from None
            registered = await service.register(w.subject, schema_request, normalize=info.normalize)
            schemas.append(render.version_dict(service.get_version(w.subject, registered.version, deleted=False)))
        stored = await associations.put(resource, wanted, olds)
    answer = {
        "resourceName": resource.name,
        "resourceNamespace": resource.namespace,
        "resourceId": resource.id,
        "resourceType": resource.type,
        "associations": [
            {
                "subject": v["subject"],
                "associationType": v["associationType"],
                "lifecycle": v["lifecycle"],
                "frozen": v["frozen"],
                **({"schema": schema} if schema is not None else {}),
            }
            for v, schema in zip(stored, schemas, strict=True)
        ],
    }
    return ok(render.dumps(answer))


WRITE_ERRORS = {**Doc.association_conflict, **Doc.association_unprocessable}


@router.post(
    "/associations",
    operation_id="createAssociation",
    summary="Associate a resource (a topic) with the subjects of its key and value, registering any schemas given.",
    response_model=AssociationResponse,
    responses=WRITE_ERRORS,
)
@leader_only
async def create_association(request: Request, service: ServiceDep, body: Body) -> Response:
    return await _create_or_update(request, service, body, create_only=True)


@router.put(
    "/associations",
    operation_id="createOrUpdateAssociation",
    summary="Create associations, or change the lifecycle or frozen flag of existing ones.",
    response_model=AssociationResponse,
    responses=WRITE_ERRORS,
)
@leader_only
async def create_or_update_association(request: Request, service: ServiceDep, body: Body) -> Response:
    return await _create_or_update(request, service, body, create_only=False)


@router.get(
    "/associations/subjects/{subject}",
    operation_id="getAssociationsBySubject",
    summary="The associations naming a subject.",
    response_model=list[Association],
    responses={**Doc.invalid_association},
)
async def by_subject(
    service: ServiceDep,
    subject: SubjectPath,
    readable: Readable,
    lookup: LookupQuery,
    page: PageQuery,
) -> Response:
    return _listed(_associations(service).by_subject(subject, lookup), readable, page)


@router.get(
    "/associations/resources/{resourceNamespace}/{resourceName}",
    operation_id="getAssociationsByResourceName",
    summary="The associations of a resource by name; namespace `-` matches every namespace.",
    response_model=list[Association],
    responses={**Doc.invalid_association},
)
async def by_resource_name(
    service: ServiceDep,
    readable: Readable,
    resourceNamespace: Annotated[str, Path(description="The Kafka cluster id, or `-` for any.")],
    resourceName: Annotated[str, Path(description="The topic.")],
    lookup: LookupQuery,
    page: PageQuery,
) -> Response:
    found = _associations(service).by_resource_name(_decoded(resourceName), _decoded(resourceNamespace), lookup)
    return _listed(found, readable, page)


@router.get(
    "/associations/resources/{resourceId}",
    operation_id="getAssociationsByResourceId",
    summary="The associations of a resource by id.",
    response_model=list[Association],
    responses={**Doc.invalid_association},
)
async def by_resource_id(
    service: ServiceDep,
    readable: Readable,
    resourceId: Annotated[str, Path(description="The resource's id.")],
    lookup: LookupQuery,
    page: PageQuery,
) -> Response:
    return _listed(_associations(service).by_resource_id(_decoded(resourceId), lookup), readable, page)


@router.delete(
    "/associations/resources/{resourceId}",
    operation_id="deleteAssociations",
    summary="Delete a resource's associations (all, or those of the types given); `cascadeLifecycle` also "
    "deletes, soft then permanently, the subjects of its strong associations.",
    status_code=204,
    response_model=None,
    responses={**Doc.association_not_found, **Doc.association_frozen},
)
@leader_only
async def delete_associations(
    request: Request,
    service: ServiceDep,
    resourceId: Annotated[str, Path(description="The resource's id.")],
    resource_type: ResourceType = None,
    association_types: AssociationTypes = None,
    cascade: Annotated[
        QueryBool, Query(alias="cascadeLifecycle", description="Delete the strong associations' subjects too.")
    ] = False,
) -> Response:
    associations = _associations(service)
    async with associations.lock:
        await associations.catch_up()
        doomed = associations.to_delete(
            _decoded(resourceId),
            resource_type=resource_type or DEFAULT_RESOURCE_TYPE,
            association_types=association_types,
            cascade=cascade,
        )
        await _require_write(request, [str(v["subject"]) for v in doomed])
        if cascade:
            for v in doomed:
                if v.get("lifecycle") == "STRONG":
                    await _delete_subject(service, str(v["subject"]))
        await associations.remove(doomed)
    return Response(status_code=204)


async def _delete_subject(service: Service, subject: str) -> None:
    """Soft, then permanently; a subject already gone (or only soft-deleted) is no error."""
    for permanent in (False, True):
        try:
            await service.delete_subject(subject, permanent=permanent)
        except errors.ApiError as e:
            if e.error_code not in (errors.ErrorCode.SUBJECT_NOT_FOUND, errors.ErrorCode.SUBJECT_SOFT_DELETED):
                raise


def _decoded(segment: str) -> str:
    """A path segment as sent, percent-decoded (``KeepEncodedSlashes`` keeps ``%2F`` inside it)."""
    return unquote(segment)
