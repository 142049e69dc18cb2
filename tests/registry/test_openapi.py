"""``openapi.yaml`` is the app's own OpenAPI document, written out (``make openapi``), and that document says
what the routes do: the statuses each kind of route can answer, Confluent's content types, the error
envelope, the query flags as Confluent reads them. ``/docs`` and ``/openapi.json`` of a live server serve it
without any CDN."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi import FastAPI
from schemathesis.specs.openapi.definitions import OPENAPI_31_VALIDATOR

from registry.http import routers
from registry.http.api import build_api
from registry.http.openapi import document
from registry.http.openapi_file import to_yaml
from registry.http.params import BOOL_PATTERN
from registry.http.routing import JSON_TYPES, RegistryRoute

SPEC_PATH = Path(__file__).resolve().parents[2] / "openapi.yaml"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorMessage"}


@pytest.fixture(scope="module")
def api() -> FastAPI:
    return build_api()


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return yaml.safe_load(SPEC_PATH.read_text())


def api_routes(api: FastAPI) -> dict[tuple[str, str], RegistryRoute]:
    """(METHOD, path template) -> route, for every API route (HEAD is Starlette's, not an operation)."""
    return {(m, r.path_format): r for r in routers.api_routes() for m in r.methods if m != "HEAD"}


def operations(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(m.upper(), path): op for path, item in spec["paths"].items() for m, op in item.items() if m in METHODS}


def resolve(spec: dict[str, Any], obj: Any) -> Any:
    while isinstance(obj, dict) and "$ref" in obj:
        node: Any = spec
        for key in obj["$ref"].removeprefix("#/").split("/"):
            node = node[key]
        obj = node
    return obj


def test_committed_file_is_the_apps_document(api: FastAPI) -> None:
    assert SPEC_PATH.read_text() == to_yaml(document(api)), "openapi.yaml is stale: run `make openapi`"


def test_spec_is_valid_openapi_31(spec: dict[str, Any]) -> None:
    assert spec["openapi"].startswith("3.1.")
    OPENAPI_31_VALIDATOR.validate(spec)  # the official OpenAPI 3.1 meta-schema, as shipped by schemathesis
    refs = re.findall(r"""\$ref["']?:\s*["']?([^"'\s}]+)""", SPEC_PATH.read_text())
    assert refs
    for ref in set(refs):
        assert ref.startswith("#/"), ref
        resolve(spec, {"$ref": ref})  # KeyError names a dangling reference
    ids = [op["operationId"] for op in operations(spec).values()]
    assert len(ids) == len(set(ids))


def test_every_route_is_an_operation_and_back(api: FastAPI, spec: dict[str, Any]) -> None:
    assert set(api_routes(api)) == set(operations(spec))
    # Confluent's v1 API as served here, 38 operations, its associations, 6, its exporters, 11, and its DEK
    # registry, 16 (not a route lost in a refactor)
    assert len(operations(spec)) == 38 + 6 + 11 + 16


def test_error_statuses_follow_from_the_routes(api: FastAPI, spec: dict[str, Any]) -> None:
    """Statuses every route of a kind can get, whatever the state: checked against what the route does."""
    ops = operations(spec)
    for key, route in api_routes(api).items():
        statuses = set(ops[key]["responses"])
        assert "406" in statuses, key  # every route negotiates the answer type
        if route.checks_body_type:
            assert "415" in statuses, key
        if route.body_model is not None:
            assert {"400", "422"} <= statuses, key
            body = ops[key]["requestBody"]
            assert body["required"] is True, key
            assert {m["schema"]["$ref"] for m in body["content"].values()} == {
                f"#/components/schemas/{route.body_model.__name__}"
            }
        int_queries = [p for p in route.dependant.query_params if p.field_info.annotation is int]
        if int_queries:
            assert "400" in statuses, key
        if route.leader_only:  # a store write can fail, time out, or find no leader
            assert "500" in statuses, key
        if "{id}" in key[1]:  # an id that is not an integer is an unknown path: 404
            assert "404" in statuses, key


def test_responses_use_registry_content_types(api: FastAPI, spec: dict[str, Any]) -> None:
    raw_text = {"getSchemaOnly", "getSchemaTextById"}  # the body is the schema text, not JSON
    for key, op in operations(spec).items():
        for status, response in op["responses"].items():
            if status == "204":  # DELETE /contexts/{context}: no body
                assert "content" not in response, (key, status)
                continue
            content = response["content"]
            assert tuple(content) == JSON_TYPES, (key, status)
            for media in content.values():
                if status.startswith(("4", "5")):
                    assert media["schema"] == ERROR_SCHEMA, (key, status)
                elif op["operationId"] in raw_text:
                    assert "schema" not in media, (key, status)
                else:
                    assert "schema" in media, (key, status)
        assert "HTTPValidationError" not in str(op)  # bad parameters are 400/404 here, never FastAPI's 422


def test_query_flags_are_documented_as_read(api: FastAPI, spec: dict[str, Any]) -> None:
    ops = operations(spec)
    flags = 0
    for key, route in api_routes(api).items():
        documented = {p["name"]: p for p in ops[key].get("parameters", ()) if p["in"] == "query"}
        for param in route.dependant.query_params:
            if param.field_info.annotation in (bool, bool | None):
                flags += 1
                schema = documented[param.alias]["schema"]
                assert schema["pattern"] == BOOL_PATTERN, (key, param.alias)
                assert schema.get("default", "false") == "false", (key, param.alias)
    assert flags > 20
    assert all(re.match(BOOL_PATTERN, v) for v in ("true", "True", "TRUE", "false", "False"))


def test_live_docs_and_document(registry_url: str) -> None:
    with httpx.Client(base_url=registry_url, timeout=10) as http:
        assert http.get("/openapi.json").json() == yaml.safe_load(SPEC_PATH.read_text())
        page = http.get("/docs", headers={"Accept": "text/html"})
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page.text)
        assert "/docs/assets/swagger-ui-bundle.js" in assets and "/docs/assets/swagger-ui.css" in assets
        assert not [a for a in assets if "://" in a], assets  # nothing from a CDN
        js = http.get("/docs/assets/swagger-ui-bundle.js")
        assert js.status_code == 200 and len(js.content) > 100_000
