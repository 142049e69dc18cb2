"""``/dek-registry/v1``: Confluent's DEK registry, the KEKs and the DEKs under them (``registry/dek``).

Answers are not kept by the read cache (it empties on ``_schemas`` changes, and these come from another
topic): ``DekRoute`` reads every time. Permissions are on ``Kek:<name>`` (``registry/security/permissions.py``):
``Read`` for the KEK and its DEKs, ``Write`` to change them; listing KEKs shows only those the caller may read.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any
from urllib.parse import unquote

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from registry import errors
from registry.dek.service import DekService, kek_answer
from registry.http import render
from registry.http.dek_models import CreateDekRequest, CreateKekRequest, Dek, Kek, UpdateKekRequest
from registry.http.errors import Responses
from registry.http.models import ErrorMessage
from registry.http.params import JsonBody, QueryBool, VersionPath
from registry.http.routing import RegistryRoute, leader_only, ok
from registry.http.security import check, principal_of
from registry.references import LATEST
from registry.security import Operation
from registry.security.permissions import kek_resource

PREFIX = "/dek-registry/v1/keks"


class DekRoute(RegistryRoute):
    """A ``RegistryRoute`` whose answers the read cache never keeps."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        self.cached = False
        return super().get_route_handler()


router = APIRouter(route_class=DekRoute, tags=["dek-registry"])


async def _dek_service(request: Request) -> DekService:
    service: DekService | None = getattr(request.app.state, "dek_service", None)
    if service is None:  # an app built without one (the one that only writes the OpenAPI document)
        raise errors.not_found_route()
    return service


DekServiceDep = Annotated[DekService, Depends(_dek_service)]


async def _kek_name(name: Annotated[str, Path(description="The KEK's name.", examples=["payments"])]) -> str:
    return unquote(name)


#: the ``{name}`` path segment, decoded
KekName = Annotated[str, Depends(_kek_name)]


async def _subject(
    subject: Annotated[str, Path(min_length=1, description="The DEK's subject, percent-encoded.")],
) -> str:
    return unquote(subject)


DekSubject = Annotated[str, Depends(_subject)]
Deleted = Annotated[QueryBool, Query(description="Include soft-deleted keys.")]
Permanent = Annotated[QueryBool, Query(description="Remove for good (the key must be soft-deleted first).")]
AlgorithmParam = Annotated[
    str | None,
    Query(description="AES128_GCM, AES256_GCM (the default) or AES256_SIV; anything else is 42271."),
]
SubjectPrefix = Annotated[
    list[str] | None,
    Query(alias="subjectPrefix", description="Only KEKs with a DEK of a subject starting with one of these."),
]
CreateKekBody = Annotated[CreateKekRequest, Depends(JsonBody(CreateKekRequest))]
UpdateKekBody = Annotated[UpdateKekRequest, Depends(JsonBody(UpdateKekRequest))]
CreateDekBody = Annotated[CreateDekRequest, Depends(JsonBody(CreateDekRequest))]


def _doc(status: int, description: str) -> Responses:
    return {status: {"model": ErrorMessage, "description": description}}


_NOT_FOUND = _doc(404, "`40470` no such key (the KEK, or the subject's DEK).")
_INVALID = _doc(422, "`42271` an invalid or missing field of the key (named in the message).")
_INVALID_VERSION = _doc(422, "`42202` an invalid version; `42271` an invalid or missing field of the key.")
_CONFLICT = _doc(409, "`40971` the key exists already.")
_KMS = _doc(500, "`50070` the KMS could not wrap or unwrap a shared KEK's DEK.")
_DELETE = {
    **_doc(404, "`40470` no such key; `40471` a permanent delete of a key that was not soft-deleted first."),
    **_doc(422, "`42271` an invalid name or version; `42272` DEKs still exist under the KEK."),
}
_UNDELETE = {
    **_doc(404, "`40470` no such key; `40472` the KEK is soft-deleted (undelete it first)."),
    **_INVALID_VERSION,
}


def _no_content() -> Response:
    return Response(status_code=204)


# ---- permissions ----------------------------------------------------------------------------------------------


class _KekAccess:
    """``operation`` on ``Kek:<name>`` of the path's ``{name}``."""

    def __init__(self, operation: Operation) -> None:
        self.operation = operation

    async def __call__(self, request: Request, name: KekName) -> None:
        principal = await principal_of(request)
        if principal is not None:
            resource = kek_resource(name)
            check(request, principal, self.operation, (resource,), resource)


async def _create_kek_access(request: Request, body: CreateKekBody) -> None:
    principal = await principal_of(request)
    if principal is not None:
        resource = kek_resource(body.name or "")
        check(request, principal, Operation.WRITE, (resource,), resource)


async def _readable_keks(request: Request) -> Callable[[str], bool]:
    principal = await principal_of(request)
    security = request.app.state.security
    if principal is None or security is None or not security.authorizer.enforcing:
        return lambda name: True
    allows = security.authorizer.allows
    return lambda name: allows(principal, Operation.READ, kek_resource(name))


ReadKek = Depends(_KekAccess(Operation.READ))
WriteKek = Depends(_KekAccess(Operation.WRITE))
ReadableKeks = Annotated[Callable[[str], bool], Depends(_readable_keks)]


# ---- KEKs -----------------------------------------------------------------------------------------------------


@router.get(PREFIX, operation_id="getKekNames", summary="The KEK names.", response_model=list[str])
async def list_keks(
    dek: DekServiceDep, readable: ReadableKeks, deleted: Deleted = False, subject_prefix: SubjectPrefix = None
) -> Response:
    names = dek.kek_names(subject_prefix or [], deleted=deleted)
    return ok(render.dumps([n for n in names if readable(n)]))


@router.post(
    PREFIX,
    operation_id="registerKek",
    dependencies=[Depends(_create_kek_access)],
    summary="Create a KEK.",
    description="Creating a soft-deleted KEK again with the same content undeletes it.",
    response_model=Kek,
    responses={**_INVALID, **_CONFLICT},
)
@leader_only
async def create_kek(dek: DekServiceDep, body: CreateKekBody) -> Response:
    kek = await dek.create_kek(
        body.name, body.kmsType, body.kmsKeyId, body.kmsProps or {}, body.doc, body.shared, body.deleted
    )
    return ok(render.dumps(kek_answer(kek)))


@router.get(
    PREFIX + "/{name}",
    operation_id="getKek",
    dependencies=[ReadKek],
    summary="A KEK.",
    response_model=Kek,
    responses={**_NOT_FOUND, **_INVALID},
)
async def get_kek(dek: DekServiceDep, name: KekName, deleted: Deleted = False) -> Response:
    return ok(render.dumps(kek_answer(dek.kek(name, deleted=deleted))))


@router.put(
    PREFIX + "/{name}",
    operation_id="updateKek",
    dependencies=[WriteKek],
    summary="Change a KEK's kmsProps, doc or shared.",
    response_model=Kek,
    responses={**_NOT_FOUND, **_INVALID},
)
@leader_only
async def update_kek(dek: DekServiceDep, name: KekName, body: UpdateKekBody) -> Response:
    kek = await dek.update_kek(name, body.kmsProps, body.doc, body.shared, body.model_fields_set)
    return ok(render.dumps(kek_answer(kek)))


@router.delete(
    PREFIX + "/{name}",
    operation_id="deregisterKek",
    dependencies=[WriteKek],
    summary="Soft delete a KEK, or remove it for good with `permanent=true`.",
    status_code=204,
    responses=_DELETE,
)
@leader_only
async def delete_kek(dek: DekServiceDep, name: KekName, permanent: Permanent = False) -> Response:
    await dek.delete_kek(name, permanent=permanent)
    return _no_content()


@router.post(
    PREFIX + "/{name}/undelete",
    operation_id="undeleteKek",
    dependencies=[WriteKek],
    summary="Undelete a soft-deleted KEK.",
    status_code=204,
    responses={**_NOT_FOUND, **_INVALID},
)
@leader_only
async def undelete_kek(dek: DekServiceDep, name: KekName) -> Response:
    await dek.undelete_kek(name)
    return _no_content()


# ---- DEKs -----------------------------------------------------------------------------------------------------


@router.get(
    PREFIX + "/{name}/deks",
    operation_id="getDekSubjects",
    dependencies=[ReadKek],
    summary="The subjects with DEKs under a KEK.",
    response_model=list[str],
    responses={**_NOT_FOUND, **_INVALID},
)
async def list_dek_subjects(dek: DekServiceDep, name: KekName, deleted: Deleted = False) -> Response:
    return ok(render.dumps(dek.dek_subjects(name, deleted=deleted)))


async def _create_dek(dek: DekService, name: str, subject: str | None, body: CreateDekRequest) -> Response:
    created = await dek.create_dek(name, subject, body.version, body.algorithm, body.encryptedKeyMaterial, body.deleted)
    return ok(render.dumps(dek.dek_answer(created)))


_CREATE_DEK_DOC: dict[str, Any] = {
    "dependencies": [WriteKek],
    "description": "Version 1 and AES256_GCM unless given. Under a shared KEK, leave `encryptedKeyMaterial` out "
    "to have the registry generate the DEK (the answer carries `keyMaterial`); otherwise it is required (42271).",
    "response_model": Dek,
    "responses": {**_NOT_FOUND, **_INVALID, **_CONFLICT, **_KMS},
}


@router.post(PREFIX + "/{name}/deks", operation_id="registerDek", summary="Create a DEK.", **_CREATE_DEK_DOC)
@leader_only
async def create_dek(dek: DekServiceDep, name: KekName, body: CreateDekBody) -> Response:
    return await _create_dek(dek, name, body.subject, body)


@router.post(
    PREFIX + "/{name}/deks/{subject}",
    operation_id="registerDekForSubject",
    summary="Create a DEK of the path's subject.",
    **_CREATE_DEK_DOC,
)
@leader_only
async def create_subject_dek(dek: DekServiceDep, name: KekName, subject: DekSubject, body: CreateDekBody) -> Response:
    return await _create_dek(dek, name, subject, body)


@router.get(
    PREFIX + "/{name}/deks/{subject}",
    operation_id="getDek",
    dependencies=[ReadKek],
    summary="The latest version of a subject's DEK.",
    response_model=Dek,
    responses={**_NOT_FOUND, **_INVALID, **_KMS},
)
async def get_latest_dek(
    dek: DekServiceDep, name: KekName, subject: DekSubject, algorithm: AlgorithmParam = None, deleted: Deleted = False
) -> Response:
    return ok(render.dumps(dek.dek_answer(dek.dek(name, subject, None, algorithm, deleted=deleted))))


@router.delete(
    PREFIX + "/{name}/deks/{subject}",
    operation_id="deregisterDekVersions",
    dependencies=[WriteKek],
    summary="Soft delete every version of a subject's DEK, or remove them with `permanent=true`.",
    status_code=204,
    responses=_DELETE,
)
@leader_only
async def delete_deks(
    dek: DekServiceDep,
    name: KekName,
    subject: DekSubject,
    algorithm: AlgorithmParam = None,
    permanent: Permanent = False,
) -> Response:
    await dek.delete_deks(name, subject, None, algorithm, permanent=permanent)
    return _no_content()


@router.post(
    PREFIX + "/{name}/deks/{subject}/undelete",
    operation_id="undeleteDekVersions",
    dependencies=[WriteKek],
    summary="Undelete every version of a subject's DEK.",
    status_code=204,
    responses=_UNDELETE,
)
@leader_only
async def undelete_deks(
    dek: DekServiceDep, name: KekName, subject: DekSubject, algorithm: AlgorithmParam = None
) -> Response:
    await dek.undelete_deks(name, subject, None, algorithm)
    return _no_content()


@router.get(
    PREFIX + "/{name}/deks/{subject}/versions",
    operation_id="getAllDekVersions",
    dependencies=[ReadKek],
    summary="The versions of a subject's DEK.",
    response_model=list[int],
    responses={**_NOT_FOUND, **_INVALID},
)
async def list_dek_versions(
    dek: DekServiceDep, name: KekName, subject: DekSubject, algorithm: AlgorithmParam = None, deleted: Deleted = False
) -> Response:
    return ok(render.dumps(dek.dek_versions(name, subject, algorithm, deleted=deleted)))


def _version(version: int) -> int | None:
    return None if version == LATEST else version


@router.get(
    PREFIX + "/{name}/deks/{subject}/versions/{version}",
    operation_id="getDekByVersion",
    dependencies=[ReadKek],
    summary="One version of a subject's DEK (`latest` or `-1`: the latest).",
    response_model=Dek,
    responses={**_NOT_FOUND, **_INVALID, **_KMS, **_INVALID_VERSION},
)
async def get_dek(
    dek: DekServiceDep,
    name: KekName,
    subject: DekSubject,
    version: VersionPath,
    algorithm: AlgorithmParam = None,
    deleted: Deleted = False,
) -> Response:
    found = dek.dek(name, subject, _version(version), algorithm, deleted=deleted)
    return ok(render.dumps(dek.dek_answer(found)))


@router.delete(
    PREFIX + "/{name}/deks/{subject}/versions/{version}",
    operation_id="deregisterDekVersion",
    dependencies=[WriteKek],
    summary="Soft delete one version of a subject's DEK, or remove it with `permanent=true`.",
    status_code=204,
    responses=_DELETE,
)
@leader_only
async def delete_dek(
    dek: DekServiceDep,
    name: KekName,
    subject: DekSubject,
    version: VersionPath,
    algorithm: AlgorithmParam = None,
    permanent: Permanent = False,
) -> Response:
    await dek.delete_deks(name, subject, _version(version), algorithm, permanent=permanent)
    return _no_content()


@router.post(
    PREFIX + "/{name}/deks/{subject}/versions/{version}/undelete",
    operation_id="undeleteDekVersion",
    dependencies=[WriteKek],
    summary="Undelete one version of a subject's DEK.",
    status_code=204,
    responses=_UNDELETE,
)
@leader_only
async def undelete_dek(
    dek: DekServiceDep, name: KekName, subject: DekSubject, version: VersionPath, algorithm: AlgorithmParam = None
) -> Response:
    await dek.undelete_deks(name, subject, _version(version), algorithm)
    return _no_content()
