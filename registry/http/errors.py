"""Every error leaves as Confluent's ``{"error_code", "message"}`` with Confluent's status and code.

``install(app)`` registers the handlers: ``ApiError`` (``registry/errors.py``, raised by operations and
routes), the framework's own HTTP errors (unknown path 404, wrong method 405, with the status as the code,
as rest-utils does) and parameters FastAPI could not convert (``params.query_error``). Anything else is
turned into a 500 by ``RegistryRoute`` after logging it.

``Doc`` lists the documented error answers each route declares, worded with the codes they carry.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from registry.errors import ApiError, http_error
from registry.http.content import CT_V1
from registry.http.models import ErrorMessage
from registry.http.params import query_error
from registry.http.render import dumps


def error_body(e: ApiError) -> bytes:
    return dumps({"error_code": e.error_code, "message": e.message})


def error_response(e: ApiError) -> Response:
    response = Response(error_body(e), e.status, media_type=CT_V1.decode())
    for name, value in e.headers:
        response.headers.append(name, value)
    return response


async def send_error(send: Any, e: ApiError) -> None:
    """Answer with ``e`` on a raw ASGI ``send`` (the layers in front of FastAPI)."""
    body = error_body(e)
    headers = [(b"content-type", CT_V1), (b"content-length", str(len(body)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in e.headers]
    await send({"type": "http.response.start", "status": e.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    return error_response(http_error(exc.status_code))


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0]
    return error_response(query_error(tuple(first["loc"]), first["type"], first.get("input")))


def install(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)


#: documented answers by status, as FastAPI's ``responses=`` takes them
Responses = dict[int | str, dict[str, Any]]


def _doc(status: int, description: str) -> Responses:
    return {status: {"model": ErrorMessage, "description": description}}


class Doc:
    """Documented error answers; a route lists those its own operation gives (``responses={**Doc.x, ...}``), and
    ``RegistryRoute`` adds those that follow from what the route is (406, 400, 415, 500)."""

    bad_request = _doc(400, "`400`: the body is not JSON, or an integer query parameter is not an integer.")
    not_acceptable = _doc(406, "`406`: the `Accept` header allows none of the JSON types the registry answers with.")
    unsupported_media_type = _doc(415, "`415`: the request `Content-Type` is not a JSON type the registry accepts.")
    store_error = _doc(
        500, "`50001` store write failed, `50002` timed out, `50003` forwarding failed, `50004` no leader."
    )
    subject_not_found = _doc(404, "`40401` subject not found.")
    subject_or_version_not_found = _doc(404, "`40401` subject not found, `40402` version not found.")
    version_not_found = _doc(404, "`40402` version not found.")
    subject_or_schema_not_found = _doc(404, "`40401` subject not found, `40403` no matching schema.")
    schema_not_found = _doc(404, "`40403` schema not found; `404` an id that is not an integer.")
    delete_subject_not_found = _doc(
        404, "`40401` not found, `40404` already soft-deleted, `40405` not soft-deleted before `permanent`."
    )
    delete_version_not_found = _doc(
        404,
        "`40401` subject not found, `40402` version not found, `40406` already soft-deleted, "
        "`40407` not soft-deleted before `permanent`.",
    )
    subject_config_not_found = _doc(
        404, "`40408` the subject has no config of its own (and `defaultToGlobal` is not set)."
    )
    subject_mode_not_found = _doc(404, "`40409` the subject has no mode of its own (and `defaultToGlobal` is not set).")
    association_not_found = _doc(404, "`40410` the resource has no association (of the types given).")
    invalid_association = _doc(422, "`42212` an invalid `lifecycle` filter.")
    association_conflict = _doc(
        409,
        "`40904` a strong association cannot join other associations of the subject, `40905` the subject has a "
        "strong association, `40907` the subject has no live version and no `schema` is given, `40908` the "
        "association is frozen; `409` a `schema` incompatible with the subject's versions.",
    )
    association_unprocessable = _doc(
        422,
        "`42212` an invalid association (a missing resource field, an unknown resource or association type or "
        "lifecycle, a duplicate type, a change of subject or of `frozen`, a create over an existing different "
        "association), `42208` an invalid subject, `42201` an invalid `schema`.",
    )
    association_frozen = _doc(409, "`40908` an association is frozen (and `cascadeLifecycle` is not set).")
    incompatible_schema = _doc(
        409, "`409` the schema is incompatible with an earlier version; `message` lists the differences."
    )
    invalid_schema = _doc(
        422,
        "`42201` invalid or empty schema, schema type or reference, or an invalid rule set (`42210`); "
        "`422` a body field of the wrong type.",
    )
    register_unprocessable = _doc(
        422,
        "`42201` invalid schema / type / reference, empty schema, or a `version` that is not the next one; "
        "`42202` an invalid imported version; `42205` read-only mode, an `id` outside IMPORT mode, no `id` in "
        "IMPORT mode, or an id owned by another schema; `42208` invalid subject; `42210` invalid rule set; "
        "`422` a body field of the wrong type.",
    )
    invalid_version = _doc(422, "`42202` invalid version; `42201` a stored schema cannot be parsed for `format`.")
    stored_schema_unparsable = _doc(422, "`42201` a stored (imported) schema cannot be parsed to render `format`.")
    delete_not_permitted = _doc(422, "`42205` read-only mode, `42206` another subject references a version.")
    delete_version_not_permitted = _doc(
        422, "`42202` invalid version, `42205` read-only mode, `42206` the version is referenced."
    )
    read_only = _doc(422, "`42205` read-only mode.")
    config_unprocessable = _doc(
        422,
        "`42203` invalid compatibility level, `42205` read-only mode, `42208` invalid subject, "
        "`42210` invalid rule set, `422` a body field of the wrong type.",
    )
    mode_unprocessable = _doc(
        422,
        "`42204` invalid mode (FORWARD is global only), `42205` IMPORT with existing subjects, "
        "`42208` invalid subject, `422` a body field of the wrong type.",
    )
    context_not_empty = _doc(
        422, "`42211` the context still has subjects (soft-deleted ones too); `400` a context name with a colon inside."
    )
    compatibility_unprocessable = _doc(
        422, "`42201` invalid or empty schema (unless `verbose`), `42202` invalid version, `422` a wrong-typed field."
    )
    exporter_not_found = _doc(404, "`40450` exporter not found.")
    exporter_invalid = _doc(
        409,
        "`40950` missing or invalid name, `40951` missing or invalid config (`schema.registry.url`, `contextType`, "
        "`context`, TLS files), `40952` invalid subjects, `40960` the exporter exists, `40964` too many exporters.",
    )
    exporter_not_paused = _doc(409, "`40963` the exporter is not paused; `40951`/`40952` an invalid change.")
    exporter_running = _doc(409, "`40961` the exporter is already running.")
    wrong_field_type = _doc(422, "`422` a body field of the wrong type.")

    # the answers of one kind of route, where several routes are of that kind
    #: reading a schema by id or GUID (as JSON or as its text)
    reading_schema = {**schema_not_found, **stored_schema_unparsable}
    #: reading one version of a subject
    reading_version = {**subject_or_version_not_found, **invalid_version}
