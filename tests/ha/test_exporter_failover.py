"""A schema exporter on a three-instance registry on Kafka: it runs on the leader, and when the leader is killed
(SIGKILL) during an export the new leader resumes at the stored offset; the destination ends up with every
schema of the source, none missing and none written twice."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import httpx
import pytest

from tests.ha.load import run_load
from tests.support.exporting import schema_writes, status, wait_caught_up
from tests.support.registry_cluster import Cluster, snapshot, wait_for_leader, wait_identical
from tests.support.registry_process import RegistryProcess
from tests.support.waiting import poll_until

pytestmark = pytest.mark.kafka


def test_the_new_leader_resumes_the_export_after_a_leader_kill(
    start_cluster: Callable[..., Cluster], start_registry: Callable[..., RegistryProcess], kafka_bootstrap: str
) -> None:
    destination = start_registry(wait=False)  # its startup overlaps the cluster's
    cluster = start_cluster(3)
    destination.wait_ready()
    before = wait_for_leader(kafka_bootstrap, cluster.election_topic)
    leader = next(n for n in cluster.nodes if n.url == before["url"])
    survivors = [n.url for n in cluster.nodes if n is not leader]
    prefix = f"{cluster.topic}-load"
    first = run_load(cluster.urls(), prefix, count=150, threads=4, subjects=20)
    assert first.failed == {}

    with httpx.Client(timeout=30) as http:
        body = {"name": "dr", "contextType": "NONE", "config": {"schema.registry.url": destination.url}}
        # created through a follower: forwarded to the leader, which runs it
        created = http.post(f"{survivors[0]}/exporters", json=body)
        assert created.status_code == 200, created.text

        # the definition is in _schemas: every instance answers it
        def names(url: str) -> list[str]:
            found: list[str] = http.get(f"{url}/exporters").json()
            return found

        for url in cluster.urls():
            poll_until(lambda: names(url), lambda found: found == ["dr"], timeout=10)  # noqa: B023
        # the first load exported: caught up, the exporter stores its offset at once (while it is behind, at most
        # once a second: on a quiet machine the kill below came before any store, and the new leader rightly
        # started from the beginning)
        poll_until(
            lambda: status(http, survivors[0], "dr"),
            lambda s: s["recordsExported"] >= 151 and s["lagRecords"] == 0,
            timeout=30,
            interval=0.05,
            what="the first load to be exported",
        )
        time.sleep(0.5)  # the store of the offset follows the catch-up
        # kill the leader while it exports the second load (and while clients keep registering)

        def on_ack(acked: int) -> None:
            if acked == 20:
                leader.kill()

        second = run_load(cluster.urls(), f"{prefix}-2", count=150, threads=4, subjects=20, retries=4, on_ack=on_ack)
        assert second.failed == {}
        after = wait_for_leader(kafka_bootstrap, cluster.election_topic, newer_than=before["generation"])
        assert after["url"] in survivors
        done = wait_caught_up(http, survivors[1], "dr", timeout=60)
        assert done["errors"] == 0

        source_view = wait_identical(survivors)
        assert len(source_view[0]) == 1 + 150 + 150  # the warm-up subject's version, and the load
        assert snapshot(destination.url) == source_view  # nothing missing, same ids
    # each instance that led after the kill went on from the offset stored before it, not from the start
    # (leadership may move twice: the early takeover, then the group's own choice)
    starts = [
        int(n)
        for node in cluster.nodes
        if node is not leader
        for n in re.findall(r"exporter dr: starting at offset (\d+)", node.log_file.read_text())
    ]
    assert starts and min(starts) > 1
    # nothing written twice: each version once in the destination's log
    writes = schema_writes(destination.log_url)
    assert len(writes) == 301 and max(writes.values()) == 1
