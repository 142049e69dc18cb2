"""Schemathesis against ``openapi.yaml`` and a live private registry: every request gets a documented status,
a documented content type and a body that matches the documented schema, and never a 5xx.

The server is private because the run registers, deletes and reconfigures at random. Mode changes are left
out of the positive random run: READONLY / IMPORT would turn later writes into 42205s, so the outcome would
depend on the order of operations. ``test_mode_changes_conform`` sends them as fixed requests and validates the
answers against the same file. The negative run (malformed input to every operation, mode changes included)
has a server of its own and only asserts what holds in any mode: a documented status, Confluent's error body
for a 4xx, no 5xx.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.support.registry_process import RegistryProcess

SPEC = Path(__file__).resolve().parents[2] / "openapi.yaml"
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
MAX_EXAMPLES = 20
AVRO = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}'

schema = schemathesis.openapi.from_path(SPEC)
schema.config.generation.update(modes=[schemathesis.GenerationMode.POSITIVE], max_examples=MAX_EXAMPLES)
random_schema = schema.exclude(method="PUT", path_regex=r"^/mode")

# Malformed input for every operation, writes and mode changes included: on a registry of its own, so a mode a
# malformed request still sets (an unknown ``force`` value is false, as in Confluent) changes only which documented
# 4xx later requests get. Bounded: the fuzzing phase only (schemathesis' coverage phase adds every boundary of
# every parameter: minutes for ~50 operations), a few examples per operation, derandomized.
NEGATIVE_EXAMPLES = 10
negative_schema = schemathesis.openapi.from_path(SPEC)
negative_schema.config.generation.update(modes=[schemathesis.GenerationMode.NEGATIVE], max_examples=NEGATIVE_EXAMPLES)
negative_schema.config.phases.update(phases=["fuzzing"])

HYPOTHESIS = settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def private_registry(module_registry: RegistryProcess) -> str:
    return module_registry.url


@random_schema.parametrize()
@HYPOTHESIS
def test_api_conforms(case: schemathesis.Case, private_registry: str) -> None:
    case.call_and_validate(base_url=private_registry, checks=CHECKS)


@pytest.fixture(scope="module")
def negative_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    rp = RegistryProcess.on_sqlite(tmp_path_factory.mktemp("schemathesis-negative")).start()
    yield rp.url
    rp.stop()


@negative_schema.parametrize()
@settings(HYPOTHESIS, max_examples=NEGATIVE_EXAMPLES)
def test_malformed_requests_conform(case: schemathesis.Case, negative_registry: str) -> None:
    """Every operation given malformed paths, queries, headers and bodies: a documented status, Confluent's
    ``{"error_code","message"}`` for each 4xx (the file documents it as ``ErrorMessage``), never a 5xx."""
    response = case.call_and_validate(base_url=negative_registry, checks=CHECKS)
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error_code", "message"}, body
        assert isinstance(body["error_code"], int) and isinstance(body["message"], str), body


def call(
    url: str,
    method: str,
    path: str,
    *,
    path_parameters: dict[str, Any] | None = None,
    query: dict[str, Any] | None = None,
    body: Any = None,
) -> tuple[int, Any]:
    """One fixed request, validated against the file; returns (status, decoded body)."""
    operation = schema[path][method]
    kwargs: dict[str, Any] = {"path_parameters": path_parameters or {}, "query": query or {}}
    if body is not None:
        kwargs.update(body=body, media_type="application/vnd.schemaregistry.v1+json")
    response = operation.Case(**kwargs).call_and_validate(base_url=url, checks=CHECKS)
    return response.status_code, response.json()


def test_mode_changes_conform(private_registry: str) -> None:
    url = private_registry
    subject = f"mode-{uuid.uuid4().hex[:8]}"
    s = {"subject": subject}
    register = {"schema": AVRO}
    assert call(url, "PUT", "/mode/{subject}", path_parameters=s, body={"mode": "readonly"}) == (
        200,
        {"mode": "READONLY"},
    )
    assert call(url, "GET", "/mode/{subject}", path_parameters=s) == (200, {"mode": "READONLY"})
    status, err = call(url, "POST", "/subjects/{subject}/versions", path_parameters=s, body=register)
    assert (status, err["error_code"]) == (422, 42205)
    status, err = call(url, "PUT", "/mode/{subject}", path_parameters=s, body={"mode": "FORWARD"})
    assert (status, err["error_code"]) == (422, 42204)
    status, err = call(url, "PUT", "/mode/{subject}", path_parameters=s, body={"mode": "SOMETIMES"})
    assert (status, err["error_code"]) == (422, 42204)
    assert call(url, "DELETE", "/mode/{subject}", path_parameters=s) == (200, {"mode": "READONLY"})
    status, err = call(url, "GET", "/mode/{subject}", path_parameters=s)
    assert (status, err["error_code"]) == (404, 40409)
    assert call(url, "GET", "/mode/{subject}", path_parameters=s, query={"defaultToGlobal": "True"}) == (
        200,
        {"mode": "READWRITE"},
    )

    assert call(url, "POST", "/subjects/{subject}/versions", path_parameters=s, body=register)[0] == 200
    status, err = call(url, "PUT", "/mode", body={"mode": "IMPORT"})
    assert (status, err["error_code"]) == (422, 42205)
    try:
        assert call(url, "PUT", "/mode", query={"force": "true"}, body={"mode": "IMPORT"}) == (
            200,
            {"mode": "IMPORT"},
        )
        imported = {"subject": f"{subject}-imported"}
        status, err = call(url, "POST", "/subjects/{subject}/versions", path_parameters=imported, body=register)
        assert (status, err["error_code"]) == (422, 42205)  # IMPORT needs an explicit id
        body = {**register, "id": 900_001, "version": 3}
        status, answer = call(url, "POST", "/subjects/{subject}/versions", path_parameters=imported, body=body)
        assert (status, answer["id"], answer["version"]) == (200, 900_001, 3)
        assert call(url, "GET", "/mode") == (200, {"mode": "IMPORT"})
    finally:
        assert call(url, "PUT", "/mode", body={"mode": "READWRITE"}) == (200, {"mode": "READWRITE"})
    assert call(url, "DELETE", "/mode") == (200, {"mode": "READWRITE"})
    assert call(url, "GET", "/schemas/ids/{id}", path_parameters={"id": 900_001})[0] == 200


def test_associations_conform(private_registry: str) -> None:
    url = private_registry
    assert call(url, "GET", "/associations/resources/{resourceId}", path_parameters={"resourceId": "t"}) == (200, [])
    status, err = call(url, "DELETE", "/associations/resources/{resourceId}", path_parameters={"resourceId": "t"})
    assert (status, err) == (404, {"error_code": 40410, "message": "Association for 't' not found."})
    created = call(
        url,
        "POST",
        "/associations",
        body={"resourceName": "t", "resourceNamespace": "-", "resourceId": "t", "associations": [{"subject": "u"}]},
    )
    assert created[0] == 409 and created[1]["error_code"] == 40907  # no schema and no version of "u"


def test_malformed_bodies_are_rejected_with_422(private_registry: str) -> None:
    """Bodies of the wrong shape are refused at the door (as Confluent's JSON binding does), never stored."""
    subject = f"meta-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=private_registry, timeout=10) as http:
        bad_bodies = [
            {"schema": '"string"', "metadata": {"properties": "x"}},
            {"schema": '"string"', "metadata": {"tags": [None, None]}},
            {"schema": '"string"', "ruleSet": {"domainRules": [{"name": "r", "mode": "WRITE", "params": [1]}]}},
            {"schema": '"string"', "version": 10_000_000_000_000_000_000},
        ]
        for body in bad_bodies:
            r = http.post(f"/subjects/{subject}/versions", json=body)
            assert (r.status_code, r.json()["error_code"]) == (422, 422), (body, r.text)
        r = http.put(f"/config/{subject}", json={"normalize": "yes", "validateRules": {}})
        assert (r.status_code, r.json()["error_code"]) == (422, 422)
        assert http.get(f"/subjects/{subject}/versions").status_code == 404
        assert http.get(f"/subjects/{subject}/metadata", params={"key": "a", "value": "b"}).status_code == 404


def test_null_fields_of_metadata_and_rule_sets_are_stored_as_absent(private_registry: str) -> None:
    """A ``null`` list or map in a rule set or metadata (config or registration) is read as left out: never
    stored, never served back as ``null`` where the file documents an array or an object."""
    subject = f"nulls-{uuid.uuid4().hex[:8]}"
    s = {"subject": subject}
    config = {"overrideRuleSet": {"domainRules": [], "encodingRules": None}, "defaultMetadata": {"tags": None}}
    assert call(private_registry, "PUT", "/config/{subject}", path_parameters=s, body=config) == (
        200,
        {"overrideRuleSet": {"domainRules": []}},
    )
    register = {
        "schema": AVRO,
        "metadata": {"tags": None, "properties": {"owner": "a"}, "sensitive": None},
        "ruleSet": {"domainRules": [{"name": "r", "mode": "WRITE", "doc": None, "params": None}]},
    }
    status, _ = call(private_registry, "POST", "/subjects/{subject}/versions", path_parameters=s, body=register)
    assert status == 200
    status, version = call(
        private_registry, "GET", "/subjects/{subject}/versions/{version}", path_parameters={**s, "version": "1"}
    )
    assert (status, version["metadata"], version["ruleSet"]) == (
        200,
        {"properties": {"owner": "a"}},
        {"domainRules": [{"name": "r", "mode": "WRITE"}]},
    )
