"""Hostile schema texts of all three types (``hostile_schemas.py``: lone surrogates, huge and deep numbers,
unicode names, giant enums, deep nesting, recursive types, diamond references, long defaults), sent to a live
registry: registration, lookup and the compatibility check each answer within the client's timeout with a
2xx, or a 4xx carrying a Confluent error code, never a 5xx. A schema that is stored is found again by its
content and served back as UTF-8. Fixed seed (``derandomize``) and bounded examples, so the run is the same
each time and takes well under a minute.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings

from registry.errors import ErrorCode
from tests.registry.hostile_schemas import BODIES, REFERENCES, references_body, subjects
from tests.support.registry_process import RegistryProcess

V1 = "application/vnd.schemaregistry.v1+json"
#: examples per schema type (Protobuf compiles in a protoc process: fewer of them)
EXAMPLES = {"AVRO": 100, "JSON": 100, "PROTOBUF": 30}
#: what "never a hang" means here: every answer within this many seconds
ANSWER_WITHIN = 30.0


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A registry of the module's own, with the referenced subjects of each type registered."""
    server = RegistryProcess.on_sqlite(tmp_path_factory.mktemp("hostile-schemas")).start()
    with httpx.Client(base_url=server.url, timeout=ANSWER_WITHIN, headers={"content-type": V1}) as client:
        for schema_type, texts in REFERENCES.items():
            for which in ("base", "left", "right"):
                refs = references_body(schema_type, ("base",)) if which != "base" else []
                body = {"schema": texts[which], "schemaType": schema_type, "references": refs}
                r = client.post(f"/subjects/ref-{schema_type.lower()}-{which}/versions", content=json.dumps(body))
                assert r.status_code == 200, r.text
        yield client
    server.stop()


def answered(r: httpx.Response) -> Any:
    """The answer is a 2xx, or a 4xx in Confluent's envelope whose code belongs to the status."""
    assert r.status_code < 500, (r.status_code, r.text[:2000])
    r.content.decode("utf-8")
    body = r.json()
    if r.status_code >= 400:
        assert set(body) == {"error_code", "message"}, body
        assert body["error_code"] in set(ErrorCode), body
        assert ErrorCode(body["error_code"]).status == r.status_code, (r.status_code, body)
    return body


def path_of(subject: str) -> str:
    return quote(subject.encode("utf-8", "surrogatepass"), safe="")


def check_hostile(http: httpx.Client, schema_type: str, schema: str, refs: tuple[str, ...], subject: str) -> int:
    """Register, look up and check ``schema``; the registration's status."""
    body = json.dumps({"schema": schema, "schemaType": schema_type, "references": references_body(schema_type, refs)})
    s = path_of(f"{subject}-{schema_type.lower()}")  # each type its own subjects: no cross-type 409s
    registered = http.post(f"/subjects/{s}/versions", content=body)
    answer = answered(registered)
    if registered.status_code == 200:
        served = http.get(f"/schemas/ids/{answer['id']}")
        assert answered(served)["schema"]
        found = http.post(f"/subjects/{s}", content=body)
        assert (found.status_code, answered(found)["id"]) == (200, answer["id"]), found.text
    base = f"ref-{schema_type.lower()}-base"
    answered(http.post(f"/compatibility/subjects/{base}/versions/latest", content=body))
    answered(http.post(f"/compatibility/subjects/{s}/versions?verbose=true", content=body))
    return registered.status_code


@pytest.mark.parametrize("schema_type", ["AVRO", "JSON", "PROTOBUF"])
def test_hostile_schema_texts_are_answered(http: httpx.Client, schema_type: str) -> None:
    statuses: Counter[int] = Counter()

    @settings(
        max_examples=EXAMPLES[schema_type],
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(body=BODIES[schema_type], subject=subjects)
    def run(body: tuple[str, tuple[str, ...]], subject: str) -> None:
        statuses[check_hostile(http, schema_type, *body, subject)] += 1

    run()
    # the strategies reach the parsers: some texts are stored, some refused as invalid schemas
    assert statuses[200] > 0 and statuses[422] > 0, statuses
