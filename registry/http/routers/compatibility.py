"""``/compatibility``: would a schema be compatible with a subject's versions? Both routes read the subject
(``Read`` on it with ``--auth``) and differ only in the versions checked against."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response

from registry.http import render
from registry.http.errors import Doc
from registry.http.models import CompatibilityCheckResponse, RegisterSchemaRequest
from registry.http.params import JsonBody, Normalize, QueryBool, ServiceDep, SubjectPath, VersionPath
from registry.http.routing import RegistryRoute, ok
from registry.http.security import ReadSubject
from registry.schema_parser import SchemaRequest
from registry.service import Service

router = APIRouter(route_class=RegistryRoute, tags=["compatibility"], dependencies=[ReadSubject])

SchemaBody = Annotated[RegisterSchemaRequest, Depends(JsonBody(RegisterSchemaRequest))]
Verbose = Annotated[
    QueryBool,
    Query(description="Add the incompatibility `messages` (and report an invalid schema as incompatible)."),
]


async def _check(
    service: Service, subject: str, version: int | None, request: SchemaRequest, normalize: bool | None, verbose: bool
) -> Response:
    """The verdict on ``request`` against ``version`` of ``subject`` (None: the versions its level names)."""
    verdict = await service.test_compatibility(subject, version, request, normalize=normalize, verbose=verbose)
    body: dict[str, object] = {"is_compatible": verdict.is_compatible}
    if verbose:
        body["messages"] = verdict.messages
    return ok(render.dumps(body))


@router.post(
    "/compatibility/subjects/{subject}/versions/{version}",
    operation_id="testCompatibilityBySubjectName",
    summary="Is the schema compatible with this version (`latest` of a missing subject is compatible)?",
    description="A version that does not exist is 40402, also when the subject does not exist.",
    response_model=CompatibilityCheckResponse,
    responses={**Doc.version_not_found, **Doc.compatibility_unprocessable},
)
async def check_version(
    service: ServiceDep,
    subject: SubjectPath,
    version: VersionPath,
    body: SchemaBody,
    normalize: Normalize = None,
    verbose: Verbose = False,
) -> Response:
    return await _check(service, subject, version, body.to_request(), normalize, verbose)


@router.post(
    "/compatibility/subjects/{subject}/versions",
    operation_id="testCompatibilityForSubject",
    summary="Is the schema compatible with the subject's live versions (as its compatibility level requires)?",
    response_model=CompatibilityCheckResponse,
    responses={**Doc.compatibility_unprocessable},
)
async def check_subject(
    service: ServiceDep, subject: SubjectPath, body: SchemaBody, normalize: Normalize = None, verbose: Verbose = False
) -> Response:
    return await _check(service, subject, None, body.to_request(), normalize, verbose)
