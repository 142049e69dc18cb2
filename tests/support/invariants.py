"""The registry's invariants after a fault, checked over every instance: the one checker the fault scenarios and
the soak share.

- every acknowledged write is present (its subject has a version with the acknowledged id and schema);
- no id is assigned to two different schemas;
- versions are contiguous per subject (1..n: the workloads that use this checker delete nothing);
- all instances answer the same bytes to the same GETs (once followers have caught up).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

import httpx

from tests.support.registry_cluster import wait_agreeing

#: GET path -> the answer's body bytes
RawView = dict[str, bytes]


@dataclass(frozen=True)
class Ack:
    """A write a client was told succeeded: ``schema`` registered under ``subject`` with ``id``."""

    subject: str
    schema: str
    id: int


def raw_view(url: str) -> RawView:
    """The bytes one instance answers to the reads that cover its state: the subjects, each subject's versions,
    and every version of every subject (``GET /schemas``: subject, version, id and schema of each)."""
    view: RawView = {}
    with httpx.Client(base_url=url, timeout=30) as http:

        def get(path: str) -> bytes:
            content = http.get(path).raise_for_status().content
            view[path] = content
            return content

        for subject in json.loads(get("/subjects")):
            get(httpx.URL(f"/subjects/{subject}/versions").raw_path.decode())
        get("/schemas")
    return view


def _ids_answer(url: str, schema_by_id: dict[int, object]) -> list[str]:
    """Where ``GET /schemas/ids/{id}`` disagrees with the versions holding that id."""
    wrong = []
    with httpx.Client(base_url=url, timeout=30) as http:
        for schema_id, schema in schema_by_id.items():
            by_id = json.loads(http.get(f"/schemas/ids/{schema_id}").raise_for_status().json()["schema"])
            if by_id != schema:
                wrong.append(f"{url}/schemas/ids/{schema_id} answers {by_id}, its versions hold {schema}")
    return wrong


def check_registry_invariants(urls: list[str], acked: Iterable[Ack], *, timeout: float = 30.0) -> RawView:
    """Assert the four invariants over the instances at ``urls`` (waiting up to ``timeout`` for them to answer
    alike); returns their common view. The failure lists every violation found."""
    view, violations = registry_violations(urls, acked, timeout=timeout)
    assert not violations, f"{len(violations)} invariant violations:\n" + "\n".join(violations)
    return view


def registry_violations(urls: list[str], acked: Iterable[Ack], *, timeout: float = 30.0) -> tuple[RawView, list[str]]:
    """The instances' common view and every violation of the four invariants (instances that never answer
    alike within ``timeout`` are one, and the first instance's view is checked)."""
    try:
        view = wait_agreeing(
            urls, raw_view, timeout=timeout, what=f"{urls} to answer the same bytes", ignoring=(httpx.HTTPError,)
        )
        disagreement = []
    except AssertionError as e:
        view = raw_view(urls[0])
        disagreement = [f"the instances never answered the same bytes: {e}"]
    violations: list[str] = list(disagreement)

    versions: dict[str, dict[int, tuple[int, object]]] = {}
    for answer in json.loads(view["/schemas"]):
        versions.setdefault(answer["subject"], {})[answer["version"]] = (answer["id"], json.loads(answer["schema"]))
    for subject, by_version in versions.items():
        if sorted(by_version) != list(range(1, len(by_version) + 1)):
            violations.append(f"{subject}: versions {sorted(by_version)} are not contiguous from 1")

    schema_by_id: dict[int, object] = {}
    for by_version in versions.values():
        for schema_id, schema in by_version.values():
            known = schema_by_id.setdefault(schema_id, schema)
            if known != schema:
                violations.append(f"id {schema_id} is assigned to two schemas: {known} and {schema}")
    violations += _ids_answer(urls[0], schema_by_id)

    for ack in acked:
        expected = json.loads(ack.schema)
        found = [(i, s) for i, s in versions.get(ack.subject, {}).values() if i == ack.id]
        if not found:
            violations.append(f"acknowledged write missing: id {ack.id} under {ack.subject}")
        elif found[0][1] != expected:
            violations.append(f"acknowledged id {ack.id} under {ack.subject} holds {found[0][1]}, not {expected}")
    return view, violations
