"""``/compatibility``: would a schema be compatible with a subject's versions?"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response

from registry.http import render
from registry.http.errors import Doc
from registry.http.models import CompatibilityCheckResponse, RegisterSchemaRequest
from registry.http.params import JsonBody, OptionalQueryBool, QueryBool, ServiceDep, SubjectPath, VersionPath
from registry.http.routing import RegistryRoute, ok
from registry.http.security import ReadSubject
from registry.service import CompatibilityVerdict

router = APIRouter(route_class=RegistryRoute, tags=["compatibility"])

SchemaBody = Annotated[RegisterSchemaRequest, Depends(JsonBody(RegisterSchemaRequest))]
Normalize = Annotated[
    OptionalQueryBool, Query(description="Normalize the schema first; when absent, the subject's config decides.")
]
Verbose = Annotated[
    QueryBool,
    Query(description="Add the incompatibility `messages` (and report an invalid schema as incompatible)."),
]


def _verdict(verdict: CompatibilityVerdict, verbose: bool) -> Response:
    body: dict[str, object] = {"is_compatible": verdict.is_compatible}
    if verbose:
        body["messages"] = verdict.messages
    return ok(render.dumps(body))


@router.post(
    "/compatibility/subjects/{subject}/versions/{version}",
    operation_id="testCompatibilityBySubjectName",
    dependencies=[ReadSubject],
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
    verdict = await service.test_compatibility(
        subject, version, body.to_request(), normalize=normalize, verbose=verbose
    )
    return _verdict(verdict, verbose)


@router.post(
    "/compatibility/subjects/{subject}/versions",
    operation_id="testCompatibilityForSubject",
    dependencies=[ReadSubject],
    summary="Is the schema compatible with the subject's live versions (as its compatibility level requires)?",
    response_model=CompatibilityCheckResponse,
    responses={**Doc.compatibility_unprocessable},
)
async def check_subject(
    service: ServiceDep, subject: SubjectPath, body: SchemaBody, normalize: Normalize = None, verbose: Verbose = False
) -> Response:
    verdict = await service.test_compatibility(subject, None, body.to_request(), normalize=normalize, verbose=verbose)
    return _verdict(verdict, verbose)
