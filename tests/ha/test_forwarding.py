"""Followers forward writes to the announced leader and pass its answer through; reads stay local.

The leader here is a recording HTTP server announced on the election topic, so the test sees exactly
what a follower sends: method, raw path and query, the caller's headers, and the body."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from confluent_kafka import Producer

from tests.support.ports import free_port
from tests.support.registry_process import RegistryProcess
from tests.support.waiting import poll_until

pytestmark = pytest.mark.kafka

LEADER_ANSWER = b'{"error_code":42201,"message":"answered by the leader"}'


class RecordingLeader(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: RecordingLeader

    def _record(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.requests.append((self.command, self.path, headers, body))
        self.send_response(422)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(LEADER_ANSWER)))
        self.end_headers()
        self.wfile.write(LEADER_ANSWER)

    do_POST = do_PUT = do_DELETE = do_GET = _record

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recording_leader() -> Iterator[RecordingLeader]:
    server = RecordingLeader()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def announce(bootstrap: str, election_topic: str, url: str, generation: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    value = json.dumps({"url": url, "generation": generation}).encode()
    producer.produce(election_topic, value=value, key=b"leader", partition=0)
    assert producer.flush(10) == 0


def follower(start_registry: Callable[..., RegistryProcess], log_url: str) -> tuple[RegistryProcess, str]:
    """A node that never leads (so writes must be forwarded), with a short wait for a leader."""
    topic = f"fwd-{uuid.uuid4().hex[:10]}"
    node = start_registry(log_url, "--topic", topic, "--leader-eligible", "false", "--store-timeout-ms", "1500")
    return node, f"{topic}_leader"


def test_no_leader_reads_work_and_writes_answer_50004(
    start_registry: Callable[..., RegistryProcess], kafka_log_url: str
) -> None:
    node, _ = follower(start_registry, kafka_log_url)
    with httpx.Client(base_url=node.url, timeout=30) as http:
        assert http.get("/subjects").json() == []
        assert http.get("/config").json() == {"compatibilityLevel": "BACKWARD"}
        r = http.post("/subjects/s/versions", json={"schema": '"string"'})
        assert (r.status_code, r.json()) == (500, {"error_code": 50004, "message": "Leader not known."})
        r = http.put("/config", json={"compatibility": "NONE"})
        assert (r.status_code, r.json()["error_code"]) == (500, 50004)


def test_writes_are_forwarded_with_the_callers_headers_and_the_answer_passed_through(
    start_registry: Callable[..., RegistryProcess],
    kafka_log_url: str,
    kafka_bootstrap: str,
    recording_leader: RecordingLeader,
) -> None:
    node, election_topic = follower(start_registry, kafka_log_url)
    announce(kafka_bootstrap, election_topic, recording_leader.url, 7)
    body = json.dumps({"schema": '"string"'}).encode()
    headers = {
        "Content-Type": "application/vnd.schemaregistry.v1+json",
        "Accept": "application/vnd.schemaregistry.v1+json",
        "Authorization": "Basic dXNlcjpwYXNz",
        "X-Request-ID": "req-42",
    }
    with httpx.Client(base_url=node.url, timeout=30) as http:
        r = poll_until(
            lambda: http.post("/subjects/team%2Forders/versions?normalize=true", content=body, headers=headers),
            lambda r: r.status_code != 500,
            timeout=15,
            interval=0.2,
            what="the node to read the announcement",
        )
        assert (r.status_code, r.content) == (422, LEADER_ANSWER)
        method, path, seen, seen_body = recording_leader.requests[-1]
        assert (method, path, seen_body) == ("POST", "/subjects/team%2Forders/versions?normalize=true", body)
        for name, value in headers.items():
            assert seen[name.lower()] == value
        assert seen["host"] == recording_leader.url.removeprefix("http://")  # the leader's, not the caller's
        assert seen["x-schemakit-forwarded"] == "1"

        r = http.delete("/subjects/team%2Forders/versions/3", params={"permanent": "true"})
        assert (r.status_code, r.content) == (422, LEADER_ANSWER)
        assert recording_leader.requests[-1][:2] == ("DELETE", "/subjects/team%2Forders/versions/3?permanent=true")
        r = http.put("/mode/x", json={"mode": "IMPORT"})
        assert (r.status_code, r.content) == (422, LEADER_ANSWER)
        assert recording_leader.requests[-1][:2] == ("PUT", "/mode/x")

        # Reads are answered locally; a request already forwarded once is not forwarded again.
        count = len(recording_leader.requests)
        assert http.get("/subjects").json() == []
        r = http.post("/subjects/s/versions", content=body, headers={**headers, "X-Schemakit-Forwarded": "1"})
        assert (r.status_code, r.json()["error_code"]) == (500, 50004)
        assert len(recording_leader.requests) == count


def test_an_unreachable_leader_answers_50003(
    start_registry: Callable[..., RegistryProcess], kafka_log_url: str, kafka_bootstrap: str
) -> None:
    node, election_topic = follower(start_registry, kafka_log_url)
    announce(kafka_bootstrap, election_topic, f"http://127.0.0.1:{free_port()}", 3)  # nobody listens there
    with httpx.Client(base_url=node.url, timeout=30) as http:
        r = poll_until(
            lambda: http.post("/subjects/s/versions", json={"schema": '"string"'}),
            lambda r: r.json()["error_code"] != 50004,
            timeout=15,
            what="the node to see the announcement",
        )
        assert (r.status_code, r.json()) == (
            500,
            {"error_code": 50003, "message": "Error while forwarding register schema request to the leader"},
        )
        r = http.delete("/subjects/s")
        assert r.json()["message"] == "Error while forwarding delete subject request to the leader"
        r = http.put("/config/s", json={"compatibility": "NONE"})
        assert r.json()["message"] == "Error while forwarding update config request to the leader"
