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

from tests.support.waiting import poll_until

#: GET path -> the answer's body bytes
RawView = dict[str, bytes]


@dataclass(frozen=True)
class Ack:
    """A write a client was told succeeded: ``schema`` registered under ``subject`` with ``id``."""

    subject: str
    schema: str
    id: int


def raw_view(url: str) -> RawView:
    """The bytes one instance answers to every read of its subjects, versions and ids."""
    view: RawView = {}
    with httpx.Client(base_url=url, timeout=30) as http:

        def get(path: str) -> bytes:
            content = http.get(path).raise_for_status().content
            view[path] = content
            return content

        ids = set()
        for subject in json.loads(get("/subjects")):
            quoted = httpx.URL(f"/subjects/{subject}").raw_path.decode()
            for version in json.loads(get(f"{quoted}/versions")):
                ids.add(json.loads(get(f"{quoted}/versions/{version}"))["id"])
        for schema_id in sorted(ids):
            get(f"/schemas/ids/{schema_id}")
    return view


def _schema_of(body: bytes) -> object:
    return json.loads(json.loads(body)["schema"])


def check_registry_invariants(urls: list[str], acked: Iterable[Ack], *, timeout: float = 30.0) -> RawView:
    """Assert the four invariants over the instances at ``urls`` (waiting up to ``timeout`` for them to answer
    alike); returns their common view. The failure lists every violation found."""
    views = poll_until(
        lambda: [raw_view(u) for u in urls],
        lambda views: all(v == views[0] for v in views[1:]),
        timeout=timeout,
        interval=0.5,
        what=f"{urls} to answer the same bytes",
        ignoring=(httpx.HTTPError,),
    )
    view = views[0]
    violations: list[str] = []

    versions: dict[str, dict[int, tuple[int, object]]] = {}
    for path, body in view.items():
        parts = path.split("/")
        if len(parts) == 5 and parts[1] == "subjects" and parts[3] == "versions":
            answer = json.loads(body)
            versions.setdefault(answer["subject"], {})[answer["version"]] = (answer["id"], _schema_of(body))
    for subject, by_version in versions.items():
        if sorted(by_version) != list(range(1, len(by_version) + 1)):
            violations.append(f"{subject}: versions {sorted(by_version)} are not contiguous from 1")

    schema_by_id: dict[int, object] = {}
    for by_version in versions.values():
        for schema_id, schema in by_version.values():
            known = schema_by_id.setdefault(schema_id, schema)
            if known != schema:
                violations.append(f"id {schema_id} is assigned to two schemas: {known} and {schema}")
    for schema_id, schema in schema_by_id.items():
        by_id = _schema_of(view[f"/schemas/ids/{schema_id}"])
        if by_id != schema:
            violations.append(f"/schemas/ids/{schema_id} answers {by_id}, its versions hold {schema}")

    for ack in acked:
        expected = json.loads(ack.schema)
        found = [(i, s) for i, s in versions.get(ack.subject, {}).values() if i == ack.id]
        if not found:
            violations.append(f"acknowledged write missing: id {ack.id} under {ack.subject}")
        elif found[0][1] != expected:
            violations.append(f"acknowledged id {ack.id} under {ack.subject} holds {found[0][1]}, not {expected}")
    assert not violations, f"{len(violations)} invariant violations:\n" + "\n".join(violations)
    return view
