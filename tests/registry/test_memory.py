"""What the registry keeps per schema: parse caches bounded by what a parse really holds, and one parse per
registration, shared by both parse caches (``benchmarks/registry_memory.py`` measures the whole process)."""

from __future__ import annotations

import gc
import json
import tracemalloc

import httpx

from registry import contexts
from registry.embedded import transport
from registry.schema_parser import PARSED_BYTES_PER_CHAR
from registry.schema_types import get_schema_type

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def record(extra_fields: int) -> str:
    """An Avro record like the benchmark's: two fields, then nullable strings with a default."""
    fields: list[dict[str, object]] = [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]
    fields += [{"name": f"f{i}", "type": ["null", "string"], "default": None} for i in range(extra_fields)]
    return json.dumps({"type": "record", "name": "Rec", "namespace": "bench", "fields": fields})


def test_the_parse_caches_count_at_least_what_a_parsed_avro_schema_holds() -> None:
    avro = get_schema_type("AVRO")
    assert avro is not None
    for extra in (0, 5, 30):
        text = record(extra)
        avro.parse(text)  # first parse: whatever the parser keeps for all schemas
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            kept = [avro.parse(text) for _ in range(20)]
            gc.collect()
            held = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
        finally:
            tracemalloc.stop()
        assert held <= PARSED_BYTES_PER_CHAR * len(text), (extra, held, len(text))


def test_a_registration_keeps_its_parse_once_for_the_next_versions_check() -> None:
    sync = transport("mock://", False)
    assert isinstance(sync, httpx.BaseTransport)
    parser = sync.registry.app.service.parser  # type: ignore[attr-defined]  # the in-process registry's own
    with httpx.Client(base_url="http://mock", transport=sync) as http:
        r = http.post("/subjects/s-value/versions", json={"schema": record(0)}, headers=CT)
        assert r.status_code == 200 and r.json()["id"] == 1
        # the stored schema's parse is there before any check asked for it, and it is the registration's own
        by_id = parser._parsed_by_id.get((contexts.DEFAULT_CONTEXT, 1))
        assert by_id is not None and by_id.canonical == http.get("/schemas/ids/1").json()["schema"]
        assert any(parsed is by_id for parsed, _ in parser._parsed._d.values())
        # the next version is checked against it (BACKWARD): a field without a default is refused, one with is not
        bad = json.loads(record(0))
        bad["fields"].append({"name": "x", "type": "int"})
        r = http.post("/subjects/s-value/versions", json={"schema": json.dumps(bad)}, headers=CT)
        assert r.status_code == 409
        r = http.post("/subjects/s-value/versions", json={"schema": record(1)}, headers=CT)
        assert r.status_code == 200 and r.json()["id"] == 2
