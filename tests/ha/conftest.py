"""Fixtures for the highly available registry on Kafka: clusters of ``schemakit serve`` processes on the
session's test broker, each cluster on its own store topic, election topic and group."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlencode

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.support.registry_process import RegistryProcess


@dataclass
class Cluster:
    topic: str
    election_topic: str
    group: str
    nodes: list[RegistryProcess]

    def urls(self) -> list[str]:
        return [n.url for n in self.nodes]


def read_topic(bootstrap: str, topic: str, idle: float = 1.0, timeout: float = 20.0) -> list:
    """Every record of partition 0 (read_committed), read until nothing new arrives for ``idle`` seconds."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"ha-test-reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.monotonic() + timeout
    last = time.monotonic()
    try:
        while time.monotonic() - last < idle and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None or msg.error() is not None:
                continue
            out.append(msg)
            last = time.monotonic()
    finally:
        consumer.close()
    return out


def announcements(bootstrap: str, election_topic: str, idle: float = 0.5) -> list[dict]:
    """The leader announcements on the election topic, in order."""
    return [
        json.loads(m.value()) for m in read_topic(bootstrap, election_topic, idle) if m.key() == b"leader" and m.value()
    ]


def wait_for_leader(bootstrap: str, election_topic: str, *, newer_than: int = 0, timeout: float = 30.0) -> dict:
    """The newest announcement once one with a generation above ``newer_than`` exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = announcements(bootstrap, election_topic, idle=0.3)
        if found and found[-1]["generation"] > newer_than:
            return found[-1]
        time.sleep(0.2)
    raise AssertionError(f"no leader newer than generation {newer_than} on {election_topic} within {timeout}s")


def wait_writable(urls: list[str], subject: str, timeout: float = 30.0) -> None:
    """Block until a write sent to each of ``urls`` succeeds (the leader is elected and known to all)."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=10) as http:
        for url in urls:
            while True:
                r = http.post(f"{url}/subjects/{subject}/versions", json={"schema": '"string"'})
                if r.status_code == 200:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"{url} did not take a write within {timeout}s: {r.status_code} {r.text}")
                time.sleep(0.2)


def snapshot(url: str) -> tuple[dict[tuple[str, int], tuple[int, str]], dict[int, str]]:
    """One instance's view: (subject, version) -> (id, schema) and id -> schema, through the REST API."""
    versions: dict[tuple[str, int], tuple[int, str]] = {}
    ids: dict[int, str] = {}
    with httpx.Client(base_url=url, timeout=30) as http:
        for subject in http.get("/subjects").raise_for_status().json():
            for v in http.get(f"/subjects/{subject}/versions").raise_for_status().json():
                body = http.get(f"/subjects/{subject}/versions/{v}").raise_for_status().json()
                versions[(subject, v)] = (body["id"], body["schema"])
        for schema_id in sorted({i for i, _ in versions.values()}):
            ids[schema_id] = http.get(f"/schemas/ids/{schema_id}").raise_for_status().json()["schema"]
    return versions, ids


@pytest.fixture(scope="session")
def ha_log_url(kafka_bootstrap: str, kafka_client_options: dict[str, str]) -> str:
    """The test log URL with shorter fetch waits: the test broker answers a fetch only when its wait is
    over, not when a record arrives, so the wait is the floor of every write's read-your-writes latency."""
    return f"kafka://{kafka_bootstrap}?{urlencode({**kafka_client_options, 'fetch.wait.max.ms': '20'})}"


@pytest.fixture(scope="session")
def ha_default_log_url(kafka_bootstrap: str) -> str:
    """The registry's own election timing (no session or heartbeat settings in the URL); only the test
    broker's fetch wait is shortened, as in ``ha_log_url`` (on a real Kafka it costs no latency)."""
    return f"kafka://{kafka_bootstrap}?fetch.wait.max.ms=20"


@pytest.fixture
def start_cluster(start_registry: Callable[..., RegistryProcess], ha_log_url: str) -> Iterator[Callable[..., Cluster]]:
    """``start_cluster(n, eligible=[...], log_url=...)``: n registry processes on one fresh store topic and
    group, on ``ha_log_url`` (fast test timing) unless told otherwise."""

    def start(
        n: int = 3, *, eligible: list[bool] | None = None, wait: bool = True, log_url: str | None = None
    ) -> Cluster:
        tag = uuid.uuid4().hex[:10]
        topic, election, group = f"schemas-{tag}", f"schemas-{tag}-leader", f"sr-{tag}"
        nodes = []
        for i in range(n):
            ok = True if eligible is None else eligible[i]
            args = ["--topic", topic, "--election-topic", election, "--group-id", group]
            nodes.append(start_registry(log_url or ha_log_url, *args, "--leader-eligible", "true" if ok else "false"))
        cluster = Cluster(topic, election, group, nodes)
        if wait:
            wait_writable(cluster.urls(), f"warmup-{tag}")
        return cluster

    yield start
