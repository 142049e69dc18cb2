"""The OpenAPI document, generated from the app's routes; ``openapi.yaml`` is this document, written out
(``registry/http/openapi_file.py``, ``make openapi``).

FastAPI writes the operations, parameters and answer shapes from the routes and models. ``document`` then
adds what a Confluent API needs on top: every body and answer under the three JSON media types, the request
body models (read by ``params.JsonBody``, not by FastAPI), query flags' defaults written as the strings
clients send, no empty answer schemas (the raw schema text routes), and no generic 422 "validation error"
(this API answers a bad parameter 400 or 404, documented per route).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema

from registry import __version__
from registry.http.params import BOOL_PATTERN
from registry.http.routers import api_routes
from registry.http.routing import JSON_TYPES

TITLE = "schemakit Schema Registry"
DESCRIPTION = """\
The REST API of the schemakit registry: the Confluent Schema Registry v1 API (7.x response shapes).

Content types. Request bodies are accepted as `application/vnd.schemaregistry.v1+json`,
`application/vnd.schemaregistry+json`, `application/json` or `application/octet-stream` (JSON in every case);
a POST/PUT with any other `Content-Type` answers 415. Answers use the type the `Accept` header prefers among
`application/vnd.schemaregistry.v1+json`, `application/vnd.schemaregistry+json` and `application/json` (in
that order of preference, as Confluent's server); no `Accept` header means the first; an `Accept` header that
allows none of them answers 406.

Errors. Every error body is `{"error_code": <int>, "message": <text>}`. Codes: 40401 subject not found,
40402 version not found, 40403 schema not found, 40404/40406 already soft-deleted, 40405/40407 not
soft-deleted before a permanent delete, 40408 no subject config, 40409 no subject mode, 40410 association
not found, 40904/40905 an association conflicting with a subject's others, 40907 no live version to
associate, 40908 a frozen association, 409 incompatible schema, 42201 invalid schema, 42202 invalid
version, 42203 invalid compatibility level, 42204 invalid mode, 42205 operation not permitted (read-only /
import mode), 42206 references exist, 42208 invalid subject, 42210 invalid rule set, 42212 invalid
association, 422 a body field of the wrong type, 400 a body that is not JSON or an integer query parameter
that is not an integer, 404 an unknown path, 405 a known path with a method it does not serve, 406 an
unsatisfiable `Accept`, 415 an unsupported request
content type, 50001-50004 store / leader errors.

Booleans in the query string are read case-insensitively: `true`, `True` and `TRUE` are true
(Python clients send `True`); any other value is false.

Live documentation of a running server: `/docs`; this document: `/openapi.json`.
"""
TAGS = [{"name": t} for t in ("subjects", "schemas", "config", "mode", "compatibility", "contexts", "server")]


def document(api: FastAPI) -> dict[str, Any]:
    doc = get_openapi(
        title=TITLE,
        version=__version__,
        description=DESCRIPTION,
        routes=api.routes,
        tags=TAGS,
        servers=[{"url": "http://localhost:8081"}],
        license_info={"name": "Apache-2.0"},
        separate_input_output_schemas=False,
    )
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    _add_body_models(schemas)
    for item in doc["paths"].values():
        for op in item.values():
            responses = op["responses"]
            for status in list(responses):
                response = responses[status]
                if _is_generic_validation_error(response):
                    del responses[status]
                    continue
                content = response.get("content")
                if content:
                    media = {k: v for k, v in next(iter(content.values())).items() if v != {}}
                    response["content"] = {t: dict(media) for t in JSON_TYPES}
            for param in op.get("parameters", ()):
                schema = param.get("schema", {})
                if schema.get("pattern") == BOOL_PATTERN and isinstance(schema.get("default"), bool):
                    schema["default"] = str(schema["default"]).lower()
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    return doc


def _add_body_models(schemas: dict[str, Any]) -> None:
    models = {r.body_model for r in api_routes() if r.body_model is not None}
    if not models:
        return
    _, defs = models_json_schema(
        [(m, "validation") for m in sorted(models, key=lambda m: m.__name__)],
        ref_template="#/components/schemas/{model}",
    )
    for name, schema in defs.get("$defs", {}).items():
        if schemas.setdefault(name, schema) != schema:
            raise ValueError(f"two different schemas are named {name!r} in the OpenAPI document")


def _is_generic_validation_error(response: dict[str, Any]) -> bool:
    content = response.get("content", {})
    return any("HTTPValidationError" in str(m.get("schema", {}).get("$ref", "")) for m in content.values())
