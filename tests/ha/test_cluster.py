"""Three registry instances on one Kafka log: concurrent writes through every instance, one leader,
identical replicas, no lost or duplicate ids; and failover when the leader is killed under that load."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from registry.leader import ELECTION_SESSION_TIMEOUT
from tests.ha.load import LoadResult, run_load, schema_text
from tests.support.registry_cluster import Cluster, wait_for_leader, wait_identical

pytestmark = pytest.mark.kafka


def check_consistent(result: LoadResult, versions: dict, ids: dict) -> None:
    """Every acknowledged registration is there under its id, and no id names two schemas."""
    for i, (subject, schema_id) in result.acked.items():
        assert json.loads(ids[schema_id]) == json.loads(schema_text(i)), f"id {schema_id} is not schema {i}"
        assert any(s == subject and vid == schema_id for (s, _), (vid, _) in versions.items()), (
            f"schema {i} (id {schema_id}) is missing from subject {subject}"
        )
    by_id: dict[int, set[str]] = {}
    by_schema: dict[str, set[int]] = {}
    for schema_id, text in [(vid, t) for vid, t in versions.values()] + list(ids.items()):
        by_id.setdefault(schema_id, set()).add(json.dumps(json.loads(text), sort_keys=True))
        by_schema.setdefault(json.dumps(json.loads(text), sort_keys=True), set()).add(schema_id)
    assert {i: s for i, s in by_id.items() if len(s) > 1} == {}, "an id names two schemas"
    assert {s: i for s, i in by_schema.items() if len(i) > 1} == {}, "a schema got two ids"


def test_three_instances_register_concurrently_and_agree(start_cluster: Callable[..., Cluster]) -> None:
    cluster = start_cluster(3)
    count, subjects = 300, 60  # 5 versions per subject, from 8 threads through 3 instances
    result = run_load(cluster.urls(), f"{cluster.topic}-load", count=count, threads=8, subjects=subjects)
    assert result.failed == {}
    assert len(result.acked) == count

    versions, ids = wait_identical(cluster.urls())
    check_consistent(result, versions, ids)
    # One writer allocating max id + 1: the schemas (plus the warm-up one) got ids 1..count + 1, none skipped.
    assert sorted(ids) == list(range(1, count + 2))
    loaded = {k: v for k, v in versions.items() if k[0].startswith(f"{cluster.topic}-load")}
    assert len(loaded) == count
    # Each subject has versions 1..5, whatever order the threads registered them in.
    for n in range(subjects):
        assert sorted(v for (s, v) in loaded if s == f"{cluster.topic}-load-{n}") == [1, 2, 3, 4, 5]


def test_failover_when_the_leader_is_killed_under_load(
    start_cluster: Callable[..., Cluster], kafka_bootstrap: str, ha_default_log_url: str
) -> None:
    # The default election timing: what an operator gets without tuning anything.
    cluster = start_cluster(3, log_url=ha_default_log_url)
    before = wait_for_leader(kafka_bootstrap, cluster.election_topic)
    leader = next(n for n in cluster.nodes if n.url == before["url"])
    survivors = [n.url for n in cluster.nodes if n is not leader]

    killed_at: list[float] = []
    took_write_at: list[float] = []
    kill_now = threading.Event()

    def probe_writes() -> None:
        # A write with no client-side retry, every 100 ms, through the survivors: when does one succeed?
        with httpx.Client(timeout=10) as http:
            n = 0
            while time.monotonic() - killed_at[0] < 30:
                url = survivors[n % 2]
                n += 1
                try:
                    r = http.post(f"{url}/subjects/{cluster.topic}-probe/versions", json={"schema": '"long"'})
                    if r.status_code == 200:
                        took_write_at.append(time.monotonic())
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)

    prober = threading.Thread(target=probe_writes)

    def on_ack(acked: int) -> None:
        if acked >= 150 and not kill_now.is_set():
            kill_now.set()
            leader.kill()  # SIGKILL: no goodbye to the group, an open transaction may be left behind
            killed_at.append(time.monotonic())
            prober.start()

    # the kill comes half-way: 150 acknowledged before it, 150 more through the failover
    result = run_load(cluster.urls(), f"{cluster.topic}-load", count=300, threads=8, retries=4, on_ack=on_ack)
    assert killed_at, "the load ended before the leader was killed"
    prober.join()

    assert took_write_at, "no write succeeded within 30 s of killing the leader"
    failover = took_write_at[0] - killed_at[0]
    after = wait_for_leader(kafka_bootstrap, cluster.election_topic, newer_than=before["generation"], timeout=5)
    assert after["url"] in survivors
    print(
        f"\nfailover: leader {before['url']} killed (SIGKILL) under load; first write acknowledged "
        f"{failover:.2f}s later by new leader {after['url']} (generation {after['generation']})"
    )
    # A follower replaced the dead leader before the group could even notice it (its session timeout).
    assert failover < ELECTION_SESSION_TIMEOUT, f"failover took {failover:.1f}s"

    # Clients that retry lose nothing: every schema ends up registered, acknowledged ones under their id.
    assert result.failed == {}, f"{len(result.failed)} registrations failed despite retries"
    versions, ids = wait_identical(survivors)
    check_consistent(result, versions, ids)
