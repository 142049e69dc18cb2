"""The DEK registry on three instances sharing the test broker: KEKs and DEKs created through a follower are
forwarded to the leader, land in the cluster's DEK topic in Confluent's record layout, read back at once on
that follower, and survive the leader being killed with the same versions, the next leader going on from
where the last one stopped."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable

import httpx
import pytest

from tests.support.registry_cluster import Cluster, read_topic, wait_for_leader
from tests.support.registry_process import RegistryProcess
from tests.support.waiting import wait_for

pytestmark = pytest.mark.kafka

KEKS = "/dek-registry/v1/keks"
MATERIAL = base64.b64encode(b"wrapped by the client's KMS").decode()


def _view(url: str) -> list[object]:
    """What one instance answers about the test's keys (timestamps included: they are the records')."""
    with httpx.Client(base_url=url, timeout=10) as api:
        return [
            api.get(KEKS, params={"deleted": "true"}).json(),
            api.get(f"{KEKS}/payments").json(),
            api.get(f"{KEKS}/shared").json(),
            api.get(f"{KEKS}/payments/deks/orders/versions", params={"deleted": "true"}).json(),
            api.get(f"{KEKS}/payments/deks/orders/versions/2", params={"deleted": "true"}).json(),
            api.get(f"{KEKS}/shared/deks/orders").json(),
        ]


def test_keys_created_on_a_follower_survive_the_leader(
    start_cluster: Callable[..., Cluster], kafka_bootstrap: str
) -> None:
    cluster = start_cluster(3)
    leader_at = wait_for_leader(kafka_bootstrap, cluster.election_topic)
    leader = next(n for n in cluster.nodes if n.url == leader_at["url"])
    follower = next(n for n in cluster.nodes if n is not leader)
    with httpx.Client(base_url=follower.url, timeout=30) as api:
        kek = api.post(KEKS, json={"name": "payments", "kmsType": "aws-kms", "kmsKeyId": "arn:aws:kms:k"})
        assert kek.status_code == 200, kek.text
        shared = {
            "name": "shared",
            "kmsType": "local-kms",
            "kmsKeyId": "k",
            "kmsProps": {"secret": "s"},
            "shared": True,
        }
        assert api.post(KEKS, json=shared).status_code == 200
        for v in (1, 2, 3):
            r = api.post(f"{KEKS}/payments/deks/orders", json={"version": v, "encryptedKeyMaterial": MATERIAL})
            assert r.status_code == 200, r.text
        generated = api.post(f"{KEKS}/shared/deks/orders", json={})
        assert generated.status_code == 200 and "keyMaterial" in generated.json()
        assert api.delete(f"{KEKS}/payments/deks/orders/versions/2").status_code == 204
        # read-your-writes on the follower that forwarded them
        assert api.get(f"{KEKS}/payments/deks/orders/versions").json() == [1, 3]
        assert api.get(f"{KEKS}/shared/deks/orders").json()["keyMaterial"] == generated.json()["keyMaterial"]
    before = _view(follower.url)
    for node in cluster.nodes:

        def caught_up(url: str = node.url) -> bool:
            return _view(url) == before

        wait_for(caught_up, 20, what=f"{node.url} to have the keys")

    # Confluent's record layout in the cluster's DEK topic
    records = [(json.loads(m.key() or b"{}"), m.value()) for m in read_topic(kafka_bootstrap, f"{cluster.topic}-deks")]
    keys = [k for k, _ in records if k.get("type") in ("KEK", "DEK")]
    assert {"tenant": "default", "name": "payments", "type": "KEK"} in keys
    assert {
        "tenant": "default", "kekName": "payments", "subject": "orders", "algorithm": "AES256_GCM", "version": 2,
        "type": "DEK",
    } in keys  # fmt: skip
    soft = [json.loads(v) for k, v in records if k.get("version") == 2 and v is not None][-1]
    assert soft == {
        "kekName": "payments", "subject": "orders", "algorithm": "AES256_GCM", "version": 2,
        "encryptedKeyMaterial": MATERIAL, "deleted": True, "type": "DEK",
    }  # fmt: skip

    leader.kill()
    wait_for_leader(kafka_bootstrap, cluster.election_topic, newer_than=leader_at["generation"])
    survivors = [n for n in cluster.nodes if n is not leader]
    for node in survivors:
        assert _view(node.url) == before
    with httpx.Client(base_url=survivors[-1].url, timeout=30) as api:
        # the new leader knows version 3 exists and takes version 4
        again = api.post(f"{KEKS}/payments/deks/orders", json={"version": 3, "encryptedKeyMaterial": MATERIAL})
        assert again.status_code == 409 and again.json()["error_code"] == 40971
        r = api.post(f"{KEKS}/payments/deks/orders", json={"version": 4, "encryptedKeyMaterial": MATERIAL})
        assert r.status_code == 200, r.text
        assert api.get(f"{KEKS}/payments/deks/orders/versions").json() == [1, 3, 4]


# Records as another registry may have written them: other key field orders, no "type" in the values, another
# tenant's key (skipped), a NOOP and a record that is not JSON (skipped).
LEGACY_KEK_KEY = b'{"type":"KEK","name":"legacy","tenant":"default"}'
LEGACY_DEK_KEY = (
    b'{"version":1,"type":"DEK","subject":"orders","kekName":"legacy","algorithm":"AES256_GCM","tenant":"default"}'
)
LEGACY_RECORDS: list[tuple[bytes, bytes | None]] = [
    (b'{"keytype":"NOOP","magic":0}', None),
    (
        LEGACY_KEK_KEY,
        b'{"name":"legacy","kmsType":"aws-kms","kmsKeyId":"arn:aws:kms:k","kmsProps":{"region":"eu"},"doc":"old",'
        b'"shared":false,"deleted":false}',
    ),
    (b'{"tenant":"acme","name":"theirs","type":"KEK"}', b'{"name":"theirs","kmsType":"x","kmsKeyId":"y"}'),
    (b"not json", b"{}"),
    (
        LEGACY_DEK_KEY,
        b'{"kekName":"legacy","subject":"orders","algorithm":"AES256_GCM","version":1,'
        b'"encryptedKeyMaterial":"' + MATERIAL.encode() + b'","deleted":false}',
    ),
]


def test_a_dek_topic_written_elsewhere_is_served_and_tombstoned_exactly(
    start_registry: Callable[..., RegistryProcess], kafka_log_url: str, kafka_bootstrap: str
) -> None:
    from tests.ha.test_takeover import fill_topic

    topic = f"deks-{uuid.uuid4().hex[:10]}"
    fill_topic(kafka_bootstrap, topic, LEGACY_RECORDS)
    node = start_registry(
        kafka_log_url, "--topic", f"{topic}-schemas", "--dek-topic", topic, "--group-id", f"sr-{topic}"
    )
    with httpx.Client(base_url=node.url, timeout=30) as api:
        assert api.get(KEKS).json() == ["legacy"]
        kek = api.get(f"{KEKS}/legacy").json()
        assert {k: v for k, v in kek.items() if k != "ts"} == {
            "name": "legacy", "kmsType": "aws-kms", "kmsKeyId": "arn:aws:kms:k", "kmsProps": {"region": "eu"},
            "doc": "old", "shared": False,
        }  # fmt: skip
        assert api.get(f"{KEKS}/legacy/deks/orders/versions/1").json()["encryptedKeyMaterial"] == MATERIAL
        # a permanent delete tombstones the very key bytes the other registry wrote, so compaction removes them
        for path in (f"{KEKS}/legacy/deks/orders", f"{KEKS}/legacy"):
            assert api.delete(path).status_code == 204
            assert api.delete(path, params={"permanent": "true"}).status_code == 204
        assert api.get(KEKS, params={"deleted": "true"}).json() == []
    tombstoned = {m.key() for m in read_topic(kafka_bootstrap, topic) if m.value() is None}
    assert {LEGACY_KEK_KEY, LEGACY_DEK_KEY} <= tombstoned
    node.restart()
    with httpx.Client(base_url=node.url, timeout=30) as api:
        assert api.get(KEKS, params={"deleted": "true"}).json() == []
