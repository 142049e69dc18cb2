"""Associations on two instances sharing the test broker: created and deleted through the follower, which
forwards the writes to the leader, and read back at once on both (the ASSOCIATION records of ``_schemas``)."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest

from tests.support.registry_cluster import Cluster, read_topic, wait_for_leader
from tests.support.waiting import wait_for

pytestmark = pytest.mark.kafka


def test_associations_written_through_a_follower(start_cluster: Callable[..., Cluster], kafka_bootstrap: str) -> None:
    cluster = start_cluster(2)
    leader_at = wait_for_leader(kafka_bootstrap, cluster.election_topic)
    follower = next(n for n in cluster.nodes if n.url != leader_at["url"])
    body = {
        "resourceName": "orders",
        "resourceNamespace": "lkc-1",
        "resourceId": "orders-id",
        "associations": [{"subject": "orders-custom", "lifecycle": "STRONG", "schema": {"schema": '"string"'}}],
    }
    with httpx.Client(base_url=follower.url, timeout=30) as api:
        created = api.post("/associations", json=body)
        assert created.status_code == 200, created.text
        found = api.get("/associations/resources/-/orders").json()  # read-your-writes on the follower
        assert [(a["subject"], a["lifecycle"]) for a in found] == [("orders-custom", "STRONG")]
    for node in cluster.nodes:

        def same(url: str = node.url) -> bool:
            return httpx.get(f"{url}/associations/resources/orders-id", timeout=10).json() == found

        wait_for(same, 20, what=f"{node.url} to have the association")
    keys = [json.loads(m.key() or b"{}") for m in read_topic(kafka_bootstrap, cluster.topic)]
    assert {
        "keytype": "ASSOCIATION",
        "resourceType": "topic",
        "resourceId": "orders-id",
        "associationType": "value",
        "magic": 0,
    } in keys
    with httpx.Client(base_url=follower.url, timeout=30) as api:
        assert "orders-custom" in api.get("/subjects").json()
        assert api.delete("/associations/resources/orders-id", params={"cascadeLifecycle": "true"}).status_code == 204
        assert api.get("/associations/resources/orders-id").json() == []
        assert "orders-custom" not in api.get("/subjects").json()  # the strong association's subject went too
    for node in cluster.nodes:

        def gone(url: str = node.url) -> bool:
            return httpx.get(f"{url}/associations/resources/orders-id", timeout=10).json() == []

        wait_for(gone, 20, what=f"{node.url} to drop the association")
