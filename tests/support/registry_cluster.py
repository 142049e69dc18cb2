"""Clusters of ``schemakit serve`` processes on a Kafka log (the highly available registry), and what the HA
tests read of them: the store and election topics, leader announcements, each instance's view.

``tests/ha/conftest.py`` makes ``ClusterStarter`` the ``start_cluster`` fixture.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlencode

import httpx
from confluent_kafka import Consumer, Message, TopicPartition

from tests.support.registry_process import RegistryProcess
from tests.support.waiting import poll_until

#: (subject, version) -> (id, schema) and id -> schema: one instance's state, as its REST API shows it
View = tuple[dict[tuple[str, int], tuple[int, str]], dict[int, str]]
T = TypeVar("T")


@dataclass
class Cluster:
    topic: str
    election_topic: str
    group: str
    nodes: list[RegistryProcess]

    def urls(self) -> list[str]:
        return [n.url for n in self.nodes]


def fast_fetch_log_url(bootstrap: str, client_options: dict[str, str]) -> str:
    """The test log URL with shorter fetch waits: the test broker answers a fetch only when its wait is
    over, not when a record arrives, so the wait is the floor of every write's read-your-writes latency."""
    return f"kafka://{bootstrap}?{urlencode({**client_options, 'fetch.wait.max.ms': '20'})}"


def default_timing_log_url(bootstrap: str) -> str:
    """The registry's own election timing (no session or heartbeat settings in the URL); only the test
    broker's fetch wait is shortened, as in ``fast_fetch_log_url`` (on a real Kafka it costs no latency)."""
    return f"kafka://{bootstrap}?fetch.wait.max.ms=20"


class ClusterStarter:
    """``start(n, eligible=[...], wait=True, log_url=..., per_node=...)``: n registry processes on one fresh
    store topic, election topic and group, on ``log_url`` (default: the one given here); ``per_node(i)`` gives
    node i's extra arguments and ``start_registry`` options (a namespace's ``wrapper`` and ``host``); with
    ``wait``, returns once a write through every instance succeeds."""

    def __init__(self, start_registry: Callable[..., RegistryProcess], log_url: str) -> None:
        self._start_registry = start_registry
        self._log_url = log_url

    def __call__(
        self,
        n: int = 3,
        *,
        eligible: list[bool] | None = None,
        wait: bool = True,
        log_url: str | None = None,
        per_node: Callable[[int], tuple[list[str], dict[str, Any]]] | None = None,
    ) -> Cluster:
        tag = uuid.uuid4().hex[:10]
        topic, election, group = f"schemas-{tag}", f"schemas-{tag}-leader", f"sr-{tag}"
        nodes = []
        for i in range(n):  # started side by side, then waited for: the startups overlap
            ok = True if eligible is None else eligible[i]
            args = ["--topic", topic, "--election-topic", election, "--group-id", group]
            args += ["--dek-topic", f"{topic}-deks"]  # each cluster its own DEK registry too
            eligibility = ["--leader-eligible", "true" if ok else "false"]
            more_args, options = per_node(i) if per_node is not None else ([], {})
            url = log_url or self._log_url
            nodes.append(self._start_registry(url, *args, *eligibility, *more_args, wait=False, **options))
        for node in nodes:
            node.wait_ready()
        cluster = Cluster(topic, election, group, nodes)
        if wait:
            wait_writable(cluster.urls(), f"warmup-{tag}")
        return cluster


def read_topic(bootstrap: str, topic: str, idle: float = 1.0, timeout: float = 20.0) -> list[Message]:
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


def announcements(bootstrap: str, election_topic: str, idle: float = 0.5) -> list[dict[str, Any]]:
    """The leader announcements on the election topic, in order."""
    values = [m.value() for m in read_topic(bootstrap, election_topic, idle) if m.key() == b"leader"]
    return [json.loads(value) for value in values if value]


def wait_for_leader(
    bootstrap: str, election_topic: str, *, newer_than: int = 0, timeout: float = 30.0
) -> dict[str, Any]:
    """The newest announcement once one with a generation above ``newer_than`` exists."""
    found = poll_until(
        lambda: announcements(bootstrap, election_topic, idle=0.3),
        lambda found: bool(found) and found[-1]["generation"] > newer_than,
        timeout=timeout,
        interval=0.2,
        what=f"a leader newer than generation {newer_than} on {election_topic}",
    )
    return found[-1]


def wait_writable(urls: list[str], subject: str, timeout: float = 30.0, **client_options: Any) -> None:
    """Block until a write sent to each of ``urls`` succeeds (the leader is elected and known to all);
    ``client_options`` go to the ``httpx.Client`` (``verify``, ``auth`` of a secured cluster)."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=10, **client_options) as http:
        for url in urls:

            def write(url: str = url) -> httpx.Response:
                return http.post(f"{url}/subjects/{subject}/versions", json={"schema": '"string"'})

            poll_until(
                write,
                lambda r: r.status_code == 200,
                timeout=max(deadline - time.monotonic(), 0.0),
                interval=0.2,
                what=f"{url} to take a write",
            )


def snapshot(url: str) -> View:
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


def wait_agreeing(
    urls: list[str],
    read: Callable[[str], T],
    *,
    timeout: float,
    what: str,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """What ``read`` gives for every instance, once it gives the same for all of them (followers apply the log a
    moment later); ``poll_until``'s AssertionError, naming ``what``, if they do not agree within ``timeout``."""
    views = poll_until(
        lambda: [read(u) for u in urls],
        lambda views: all(v == views[0] for v in views[1:]),
        timeout=timeout,
        interval=0.5,
        what=what,
        ignoring=ignoring,
    )
    return views[0]


def wait_identical(urls: list[str], timeout: float = 20.0) -> View:
    """The instances' common view once they agree."""
    return wait_agreeing(urls, snapshot, timeout=timeout, what=f"the views of {urls} to agree")
