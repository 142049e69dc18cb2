"""``openapi.yaml`` and the app's router describe the same API: same operations both ways, the query
parameters each handler reads are the ones declared, and the file is a valid OpenAPI 3.0 document."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from schemathesis.specs.openapi.definitions import OPENAPI_30_VALIDATOR

from registry import app as app_module
from registry.app import Route, router

SPEC_PATH = Path(__file__).resolve().parents[2] / "openapi.yaml"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
JSON_TYPES = {"application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json", "application/json"}
#: served by the router's fallback (``Router.match``), not by a registered route
FALLBACK_OPERATIONS = {("GET", "/associations/{}")}
# req.q("x"), req.qbool("x"), req.qint("x", ...), req.query.get("x", ...)
QUERY_READ = re.compile(r"""req\.(?:q|qbool|qint|query\.get)\(\s*["']([^"']+)["']""")
HELPER_CALL = re.compile(r"\b(_\w+)\(req\b")


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return yaml.safe_load(SPEC_PATH.read_text())


def template(parts: tuple[str, ...] | list[str]) -> str:
    """A path with every parameter name blanked: ``/subjects/{}/versions``."""
    return "/" + "/".join("{}" if p.startswith("{") else p for p in parts)


def resolve(spec: dict[str, Any], obj: Any) -> Any:
    while isinstance(obj, dict) and "$ref" in obj:
        node: Any = spec
        for key in obj["$ref"].removeprefix("#/").split("/"):
            node = node[key]
        obj = node
    return obj


def operations(spec: dict[str, Any]) -> dict[tuple[str, str], tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(METHOD, template) -> (operation, its parameters with path-level ones merged in, resolved)."""
    out = {}
    for path, item in spec["paths"].items():
        for method in METHODS:
            if method in item:
                op = item[method]
                params = {}
                for p in [*item.get("parameters", []), *op.get("parameters", [])]:
                    p = resolve(spec, p)
                    params[(p["name"], p["in"])] = p
                out[(method.upper(), template(path.strip("/").split("/") if path != "/" else []))] = (
                    op,
                    list(params.values()),
                )
    return out


def routes() -> dict[tuple[str, str], Route]:
    return {(r.method, template(r.parts)): r for r in router.routes}


def handler_source(fn: Any, seen: set[str] | None = None) -> str:
    """The handler's source plus that of the module helpers it passes ``req`` to (``_normalize_param``...)."""
    seen = seen if seen is not None else set()
    src = inspect.getsource(fn)
    parts = [src]
    for name in HELPER_CALL.findall(src):
        helper = getattr(app_module, name, None)
        if callable(helper) and name not in seen and name != fn.__name__:
            seen.add(name)
            parts.append(handler_source(helper, seen))
    return "\n".join(parts)


def query_reads(route: Route) -> set[str]:
    return set(QUERY_READ.findall(handler_source(route.handler)))


def test_spec_is_valid_openapi_30(spec: dict[str, Any]) -> None:
    assert spec["openapi"].startswith("3.0.")
    OPENAPI_30_VALIDATOR.validate(spec)  # the official OpenAPI 3.0 meta-schema, as shipped by schemathesis
    refs = re.findall(r"""\$ref["']?:\s*["']([^"']+)["']""", SPEC_PATH.read_text())
    assert refs
    for ref in set(refs):
        assert ref.startswith("#/"), ref
        resolve(spec, {"$ref": ref})  # KeyError names a dangling reference
    ids = [op.get("operationId") for op, _ in operations(spec).values()]
    assert None not in ids and len(ids) == len(set(ids))


def test_every_route_is_documented(spec: dict[str, Any]) -> None:
    missing = sorted(set(routes()) - set(operations(spec)))
    assert not missing, f"routed by the app but not in openapi.yaml: {missing}"


def test_every_documented_operation_is_served(spec: dict[str, Any]) -> None:
    extra = sorted(set(operations(spec)) - set(routes()) - FALLBACK_OPERATIONS)
    assert not extra, f"in openapi.yaml but not routed by the app: {extra}"
    for method, path in FALLBACK_OPERATIONS:
        segments = [s if s != "{}" else "some-resource" for s in path.strip("/").split("/")]
        route, _ = router.match(method, segments)  # raises the 404/405 ApiError if nothing serves it
        assert route.handler is app_module._associations


def test_path_parameters_match_templates(spec: dict[str, Any]) -> None:
    for path, item in spec["paths"].items():
        names = re.findall(r"\{(\w+)\}", path)
        for method in METHODS:
            if method not in item:
                continue
            _, params = operations(spec)[(method.upper(), template(path.strip("/").split("/") if path != "/" else []))]
            declared = sorted(p["name"] for p in params if p["in"] == "path")
            assert declared == sorted(names), f"{method.upper()} {path}"
            assert all(p["required"] for p in params if p["in"] == "path")


def test_query_parameters_match_handler_reads(spec: dict[str, Any]) -> None:
    ops = operations(spec)
    for key, route in routes().items():
        reads = query_reads(route)
        declared = {p["name"] for p in ops[key][1] if p["in"] == "query"}
        assert declared == reads, f"{key}: declared-only {declared - reads}, read-only {reads - declared}"


def test_query_parameter_types_match_how_they_are_read(spec: dict[str, Any]) -> None:
    for key, route in routes().items():
        src = handler_source(route.handler)
        for p in operations(spec)[key][1]:
            if p["in"] != "query":
                continue
            schema = resolve(spec, p["schema"])
            name = re.escape(p["name"])
            if re.search(rf"""req\.qbool\(\s*["']{name}["']""", src):
                assert schema.get("pattern") or schema.get("type") == "boolean", (key, p["name"])
                if schema.get("pattern"):
                    assert all(re.match(schema["pattern"], v) for v in ("true", "True", "TRUE", "false", "False"))
            elif re.search(rf"""req\.qint\(\s*["']{name}["']""", src):
                assert schema["type"] == "integer", (key, p["name"])
            elif re.search(rf"""req\.query\.get\(\s*["']{name}["']""", src):
                assert schema["type"] == "array" and p.get("explode", True), (key, p["name"])  # repeatable
            else:
                assert schema["type"] == "string", (key, p["name"])


def test_error_statuses_follow_from_the_code(spec: dict[str, Any]) -> None:
    """Statuses every operation of a kind can get, whatever the state: checked against what the code does."""
    ops = operations(spec)
    for key, route in routes().items():
        op = ops[key][0]
        statuses = set(op["responses"])
        src = handler_source(route.handler)
        if key[0] in ("POST", "PUT"):  # RegistryApp._http checks the Content-Type of every body
            assert "415" in statuses, key
        if "req.json()" in src:
            assert {"400", "422"} <= statuses, key
            assert resolve(spec, op["requestBody"])["required"] is True, key
        if "req.qint(" in src:
            assert "400" in statuses, key
        if route.write:  # a store write can fail or time out
            assert "500" in statuses, key
        if "_schema_id(req)" in src:  # a non-integer id is an unknown path: 404
            assert "404" in statuses, key


def test_responses_use_registry_content_types(spec: dict[str, Any]) -> None:
    error_schema = {"$ref": "#/components/schemas/ErrorMessage"}
    for key, (op, _) in operations(spec).items():
        route = routes().get(key)
        raw_text = route is not None and "RawText(" in inspect.getsource(route.handler)
        for status, response in op["responses"].items():
            response = resolve(spec, response)
            content = response["content"]
            assert set(content) == JSON_TYPES, (key, status)
            for media in content.values():
                if status.startswith(("4", "5")):
                    assert media["schema"] == error_schema, (key, status)
                elif raw_text:
                    assert "schema" not in media, (key, status)  # the body is the schema text, not JSON
                else:
                    assert "schema" in media, (key, status)
