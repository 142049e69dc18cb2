"""A deposed leader cannot write: its transactional producer is fenced by the new leader's."""

from __future__ import annotations

import json
import os
import signal
import socket
import uuid
from collections.abc import Callable

import httpx
import pytest

from registry.leader import HEADER_GENERATION, LeaderAppender
from streams.log import ProducerFencedError, open_log
from tests.support.registry_cluster import Cluster, read_topic, wait_for_leader, wait_identical, wait_writable

pytestmark = pytest.mark.kafka


def test_the_leader_appender_is_fenced_by_its_successor(kafka_log_url: str, kafka_bootstrap: str) -> None:
    tag = uuid.uuid4().hex[:10]
    topic, txid = f"fence-{tag}", f"fence-tid-{tag}"
    with open_log(kafka_log_url) as log:
        log.create_topic(topic, 1, compacted=True)
        fenced: list[str] = []
        old_producer = log.producer(txid)
        old_producer.init_transactions()
        old = LeaderAppender(old_producer, [(HEADER_GENERATION, b"1")], fenced.append)
        old.append([(topic, b"k", b"old")], 10)

        new_producer = log.producer(txid)
        new_producer.init_transactions()  # a new leader starts: same transactional id, newer epoch
        with pytest.raises(ProducerFencedError):
            old.append([(topic, b"k", b"zombie")], 10)
        assert len(fenced) == 1
        with pytest.raises(ProducerFencedError, match="no longer the leader"):
            old.append([(topic, b"k", b"zombie again")], 10)  # refused locally, never sent
        LeaderAppender(new_producer, [(HEADER_GENERATION, b"2")], fenced.append).append([(topic, b"k", b"new")], 10)
        new_producer.close()
        old.retire()

    records = read_topic(kafka_bootstrap, topic)
    assert [(m.value(), dict(m.headers())[HEADER_GENERATION]) for m in records if m.value() is not None] == [
        (b"old", b"1"),
        (b"new", b"2"),
    ]


def _raw_register(port: int, subject: str, schema: str) -> socket.socket:
    """Send a register request without waiting for the answer (the server may be paused)."""
    body = json.dumps({"schema": schema}).encode()
    head = (
        f"POST /subjects/{subject}/versions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/vnd.schemaregistry.v1+json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(head.encode() + body)
    return sock


def _read_response(sock: socket.socket) -> tuple[int, dict]:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def test_a_paused_leader_that_resumes_cannot_write(start_cluster: Callable[..., Cluster], kafka_bootstrap: str) -> None:
    cluster = start_cluster(3)
    first = wait_for_leader(kafka_bootstrap, cluster.election_topic)
    zombie = next(n for n in cluster.nodes if n.url == first["url"])
    assert zombie.proc is not None
    schema_a = '{"type":"record","name":"A","fields":[{"name":"a","type":"int"}]}'
    schema_b = '{"type":"record","name":"B","fields":[{"name":"b","type":"int"}]}'

    os.kill(zombie.proc.pid, signal.SIGSTOP)  # e.g. a long GC pause: the group drops it, it does not know
    try:
        second = wait_for_leader(kafka_bootstrap, cluster.election_topic, newer_than=first["generation"])
        assert second["url"] != zombie.url
        with httpx.Client(timeout=30) as http:
            r = http.post(f"{second['url']}/subjects/{cluster.topic}-a/versions", json={"schema": schema_a})
        assert r.status_code == 200, r.text
        id_a = r.json()["id"]
        # Queued while paused, this request runs the moment the zombie resumes, on its stale state (it has
        # not seen schema A, so as a leader it would hand A's id to schema B).
        pending = _raw_register(zombie.port, f"{cluster.topic}-b", schema_b)
    finally:
        os.kill(zombie.proc.pid, signal.SIGCONT)
    status, body = _read_response(pending)
    fenced = "fenced by a newer leader" in zombie.log_file.read_text()
    print(f"\nzombie answered {status} {body}; its transactional producer was fenced: {fenced}")
    if status == 200:
        assert body["id"] != id_a
    else:
        assert (status, body["error_code"]) in ((500, 50004), (500, 50003)), body

    # The log: nothing written with the zombie's generation after the new leader's first record, and no
    # id was ever written for two different schemas.
    records = read_topic(kafka_bootstrap, cluster.topic)
    generations = [dict(m.headers() or ()).get(HEADER_GENERATION) for m in records]
    new_start = generations.index(str(second["generation"]).encode())
    assert str(first["generation"]).encode() not in generations[new_start:]
    schemas_by_id: dict[int, set[str]] = {}
    for m in records:
        if m.value() is not None and b'"SCHEMA"' in m.key():
            value = json.loads(m.value())
            schemas_by_id.setdefault(value["id"], set()).add(value["schema"])
    assert all(len(s) == 1 for s in schemas_by_id.values()), schemas_by_id
    assert schemas_by_id[id_a] == {schema_a}

    # The old leader rejoins as a working member: it takes writes (forwarding or leading) and agrees.
    wait_writable([zombie.url], f"{cluster.topic}-after")
    _, ids = wait_identical(cluster.urls(), timeout=20)
    assert json.loads(ids[id_a]) == json.loads(schema_a)
    if status == 200:
        assert json.loads(ids[body["id"]]) == json.loads(schema_b)
