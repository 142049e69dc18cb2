"""Schema exporters between two live registries (each ``schemakit serve`` on its own SQLite log): what reaches
the destination, under which names, and what ``/exporters`` answers on the way."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.support.exporting import (
    answers,
    avro_version,
    fill,
    register,
    schema_writes,
    settings_writes,
    status,
    wait_caught_up,
)
from tests.support.registry_process import RegistryProcess
from tests.support.waiting import poll_until

SUBJECTS = [f"topic{i:02d}-value" for i in range(20)]


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


@pytest.fixture
def pair(start_registry: Callable[..., RegistryProcess]) -> tuple[RegistryProcess, RegistryProcess]:
    """(source, destination), started side by side."""
    source, destination = start_registry(wait=False), start_registry(wait=False)
    return source.wait_ready(), destination.wait_ready()


def create(http: httpx.Client, url: str, name: str, destination: str, **fields: object) -> None:
    body = {"name": name, "config": {"schema.registry.url": destination}, **fields}
    response = http.post(f"{url}/exporters", json=body)
    assert response.status_code == 200, response.text
    assert response.json() == {"name": name}


def test_200_schemas_reach_the_destination_byte_for_byte(
    pair: tuple[RegistryProcess, RegistryProcess], http: httpx.Client
) -> None:
    source, destination = pair
    src = source.url
    # 200 schemas in 20 subjects, a reference, a soft-deleted version, a hard-deleted one, a subject config
    fill(http, src, SUBJECTS, 9)
    common = register(http, src, "common", '{"type":"fixed","name":"Hash","size":16}')
    register(
        http,
        src,
        "with-ref",
        '{"type":"record","name":"Doc","fields":[{"name":"h","type":"Hash"}]}',
        references=[{"name": "Hash", "subject": "common", "version": 1}],
    )
    assert http.delete(f"{src}/subjects/{SUBJECTS[0]}/versions/9").status_code == 200
    assert http.delete(f"{src}/subjects/{SUBJECTS[1]}/versions/9").status_code == 200
    assert http.delete(f"{src}/subjects/{SUBJECTS[1]}/versions/9?permanent=true").status_code == 200
    assert http.put(f"{src}/config/{SUBJECTS[2]}", json={"compatibility": "FULL"}).status_code == 200

    create(http, src, "dr", destination.url, contextType="NONE")
    # and more while it runs: the last ten versions of each subject
    fill(http, src, SUBJECTS[2:], 1, first=10)
    fill(http, src, SUBJECTS[:2], 1, first=10)
    done = wait_caught_up(http, src, "dr")
    assert done["recordsExported"] >= 200 and done["errors"] == 0 and done["trace"] is None

    ids = json.loads(http.get(f"{src}/schemas/ids/{common}/versions").content)
    assert ids == [{"subject": "common", "version": 1}]
    source_answers = answers(http, src)
    assert len(source_answers) > 600
    assert answers(http, destination.url) == source_answers
    assert http.get(f"{destination.url}/config/{SUBJECTS[2]}").json()["compatibilityLevel"] == "FULL"
    assert http.get(f"{destination.url}/mode/{SUBJECTS[3]}").json() == {"mode": "IMPORT"}
    # nothing written twice at the destination: each version (and each soft delete) as often as at the source
    # (topic01-value version 9 twice: hard-deleted, then a new version 9)
    writes = schema_writes(destination.log_url)
    assert writes == schema_writes(source.log_url)
    assert sum(n for (_, _, deleted), n in writes.items() if not deleted) == 200 + 2

    metrics = poll_until(  # read while no progress record of its own is on its way
        lambda: http.get(f"{src}/metrics").text,
        lambda text: 'schemakit_registry_exporter_lag_records{exporter="dr"} 0.0' in text,
        timeout=10,
        what="the lag metric to be 0",
    )
    assert re.search(r'schemakit_registry_exporter_records_exported_total\{exporter="dr"\} (\d+)', metrics)
    assert 'schemakit_registry_exporter_state{exporter="dr",state="RUNNING"} 1.0' in metrics


def test_custom_context_rename_format_and_subject_patterns(
    pair: tuple[RegistryProcess, RegistryProcess], http: httpx.Client
) -> None:
    source, destination = pair
    src, dst = source.url, destination.url
    ids = {s: register(http, src, s, avro_version(s, 1)) for s in ("orders-value", "orders-key", "payments-value")}
    prod = register(http, src, ":.prod:orders-value", avro_version("prod-orders", 1))
    create(
        http,
        src,
        "linked",
        dst,
        contextType="CUSTOM",
        context="dc1",
        subjects=["orders*", ":.prod:*"],
        subjectRenameFormat="dc_${subject}",
    )
    assert http.get(f"{src}/exporters/linked").json() == {
        "name": "linked",
        "subjects": ["orders*", ":.prod:*"],
        "contextType": "CUSTOM",
        "context": ".dc1",
        "subjectRenameFormat": "dc_${subject}",
        "config": {"schema.registry.url": dst},
    }
    wait_caught_up(http, src, "linked")
    assert http.get(f"{dst}/subjects", params={"subjectPrefix": ":*:"}).json() == [
        ":.dc1.prod:dc_orders-value",
        ":.dc1:dc_orders-key",
        ":.dc1:dc_orders-value",
    ]
    for subject in ("orders-value", "orders-key"):
        got = http.get(f"{dst}/subjects/:.dc1:dc_{subject}/versions/1").json()
        assert got["id"] == ids[subject]
        assert got["schema"] == http.get(f"{src}/subjects/{subject}/versions/1").json()["schema"]
    assert http.get(f"{dst}/subjects/:.dc1.prod:dc_orders-value/versions/1").json()["id"] == prod
    assert http.get(f"{dst}/schemas/ids/{prod}", params={"subject": ":.dc1.prod:"}).status_code == 200
    assert http.get(f"{dst}/contexts").json() == [".", ".dc1", ".dc1.prod"]


def test_pause_resume_reset_and_the_error_codes(
    pair: tuple[RegistryProcess, RegistryProcess], http: httpx.Client
) -> None:
    source, destination = pair
    src, dst = source.url, destination.url
    fill(http, src, SUBJECTS[:4], 1)
    create(http, src, "e", dst, contextType="NONE")
    assert http.put(f"{src}/config/{SUBJECTS[0]}", json={"compatibility": "NONE"}).status_code == 200
    wait_caught_up(http, src, "e")

    def answer(method: str, path: str, **kw: object) -> tuple[int, int | None]:
        r = http.request(method, src + path, **kw)  # type: ignore[arg-type]
        return r.status_code, (r.json() or {}).get("error_code") if r.content else None

    assert answer("PUT", "/exporters/e/resume") == (409, 40961)
    assert answer("PUT", "/exporters/e/reset") == (409, 40963)
    assert answer("PUT", "/exporters/e/config", json={"basic.auth.user.info": "u:p"}) == (409, 40963)
    assert answer("POST", "/exporters", json={"name": "e", "config": {"schema.registry.url": dst}}) == (409, 40960)
    assert answer("POST", "/exporters", json={"config": {"schema.registry.url": dst}}) == (409, 40950)
    assert answer("POST", "/exporters", json={"name": "x", "config": {}}) == (409, 40951)
    bad_context = {"name": "x", "contextType": "CUSTOM", "config": {"schema.registry.url": dst}}
    assert answer("POST", "/exporters", json=bad_context) == (409, 40951)
    assert answer("POST", "/exporters", json={"name": "x", "subjects": [], "config": {"schema.registry.url": dst}}) == (
        409,
        40952,
    )
    assert answer("GET", "/exporters/nope") == (404, 40450)
    assert answer("GET", "/exporters/nope/status") == (404, 40450)

    assert http.put(f"{src}/exporters/e/pause").json() == {"name": "e"}
    fill(http, src, SUBJECTS[:4], 1, first=2)
    paused = status(http, src, "e")
    assert paused["state"] == "PAUSED" and paused["lagRecords"] >= 4
    time.sleep(1.5)  # a paused exporter writes nothing
    assert http.get(f"{dst}/subjects/{SUBJECTS[0]}/versions").json() == [1]
    # a paused exporter may be changed
    assert http.put(f"{src}/exporters/e/config", json={"basic.auth.user.info": "u:p"}).status_code == 200
    assert http.get(f"{src}/exporters/e/config").json() == {"schema.registry.url": dst, "basic.auth.user.info": "u:p"}
    assert http.put(f"{src}/exporters/e", json={"subjects": [SUBJECTS[0], SUBJECTS[1]]}).status_code == 200

    assert http.put(f"{src}/exporters/e/resume").json() == {"name": "e"}
    wait_caught_up(http, src, "e")
    assert http.get(f"{dst}/subjects/{SUBJECTS[0]}/versions").json() == [1, 2]
    assert http.get(f"{dst}/subjects/{SUBJECTS[3]}/versions").json() == [1]  # no longer exported

    # reset: everything again from the start, nothing written twice
    assert http.put(f"{src}/exporters/e/pause").status_code == 200
    assert http.put(f"{src}/exporters/e/reset").status_code == 200
    assert status(http, src, "e")["offset"] == -1
    assert http.put(f"{src}/exporters/e/resume").status_code == 200
    wait_caught_up(http, src, "e")
    writes = schema_writes(destination.log_url)
    assert len(writes) == 6 and max(writes.values()) == 1  # four versions 1, two versions 2
    settings = settings_writes(destination.log_url)  # the config once, IMPORT mode once per subject
    assert settings == {("CONFIG", SUBJECTS[0]): 1, **{("MODE", s): 1 for s in SUBJECTS[:4]}}

    assert http.delete(f"{src}/exporters/e").status_code == 204
    assert http.get(f"{src}/exporters").json() == []
    assert answer("GET", "/exporters/e") == (404, 40450)


def test_a_destination_down_for_10_seconds(pair: tuple[RegistryProcess, RegistryProcess], http: httpx.Client) -> None:
    source, destination = pair
    src = source.url
    fill(http, src, SUBJECTS[:5], 1)
    create(http, src, "e", destination.url, contextType="NONE")
    wait_caught_up(http, src, "e")

    destination.stop()
    down_at = time.monotonic()
    fill(http, src, SUBJECTS[:5], 2, first=2)
    failing = poll_until(
        lambda: status(http, src, "e"),
        lambda s: s["state"] == "ERROR",
        timeout=20,
        interval=0.2,
        what="the exporter to report the destination down",
    )
    assert "destination unreachable" in failing["trace"] and failing["lastError"] == failing["trace"]
    assert abs(failing["lastErrorTs"] / 1000 - time.time()) < 10
    assert failing["lagRecords"] >= 10 and failing["lagSeconds"] > 0
    metrics = http.get(f"{src}/metrics").text
    assert 'schemakit_registry_exporter_state{exporter="e",state="ERROR"} 1.0' in metrics
    time.sleep(max(0.0, 10 - (time.monotonic() - down_at)))

    destination.start()
    recovered = wait_caught_up(http, src, "e", timeout=30)
    assert recovered["trace"] is None and recovered["lastError"] is not None  # kept after recovering
    assert answers(http, destination.url) == answers(http, src)
    assert schema_writes(destination.log_url) == schema_writes(source.log_url)
    log_text = source.log_file.read_text()
    assert "exporter e: RUNNING -> ERROR" in log_text and "exporter e: ERROR -> RUNNING" in log_text
