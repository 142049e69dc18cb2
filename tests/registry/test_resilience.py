"""The registry process against failing storage and hostile settings: a full disk, a second registry on the
same SQLite store, secrets in the log URL, a schema protoc cannot compile in time."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from streams.log import open_log
from tests.support.faults import small_disk
from tests.support.ports import free_port
from tests.support.registry_process import RegistryProcess


def json_schema(i: int) -> str:
    """About 20 KB each, all different, each backward compatible with the others (only the text changes)."""
    return json.dumps({"type": "object", "description": f"schema {i}: " + "lorem ipsum " * 1700})


def test_a_full_disk_answers_50001_with_the_cause_and_applies_nothing(
    start_registry: Callable[..., RegistryProcess], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    node = start_registry(f"sqlite:///{data}", wrapper=small_disk(data, "256k"))
    with httpx.Client(base_url=node.url, timeout=30) as http:
        ids = []
        for i in range(40):
            r = http.post("/subjects/big/versions", json={"schemaType": "JSON", "schema": json_schema(i)})
            if r.status_code != 200:
                break
            ids.append(r.json()["id"])
        else:
            pytest.fail("40 schemas of 20 KB fit on a 256 KiB disk")
        assert len(ids) >= 2
        assert r.status_code == 500
        body = r.json()
        assert body["error_code"] == 50001
        assert body["message"].startswith("Register operation failed while writing to the Kafka store: SQLite log ")
        assert "database or disk is full" in body["message"]

        # Nothing of the failed write is anywhere, and the server goes on serving what it has.
        failed = {"schemaType": "JSON", "schema": json_schema(len(ids))}
        assert http.get("/subjects").json() == ["big"]
        assert http.get("/subjects/big/versions").json() == list(range(1, len(ids) + 1))
        assert http.post("/subjects/big", json=failed).json()["error_code"] == 40403
        assert http.get(f"/schemas/ids/{ids[-1] + 1}").json()["error_code"] == 40403
        latest = http.get("/subjects/big/versions/latest").json()
        assert (latest["version"], latest["id"]) == (len(ids), ids[-1])
        # A second attempt fails the same way (no state was left half-changed by the first).
        r = http.post("/subjects/big/versions", json=failed)
        assert (r.status_code, r.json()["error_code"]) == (500, 50001)


def serve_and_expect_refusal(log_url: str, *extra: str) -> str:
    """Run ``schemakit serve``; it must exit with status 2 without serving. Its one ``cannot start`` line."""
    cmd = [sys.executable, "-m", "registry", "serve", "--log", log_url, "--port", str(free_port()), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("schemakit: cannot start: ")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_two_registries_cannot_serve_one_sqlite_store(
    start_registry: Callable[..., RegistryProcess], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'data'}"
    first = start_registry(url)
    assert first.proc is not None
    message = serve_and_expect_refusal(url)
    lock = tmp_path / "data" / "log.sqlite3.registry-_schemas.lock"
    assert message == (
        f"schemakit: cannot start: topic '_schemas' of the log at {tmp_path / 'data' / 'log.sqlite3'} is already "
        f"served by schemakit registry pid {first.proc.pid} at {first.url} (lock {lock}): two registries on one "
        "SQLite log would hand out the same ids; stop that one or use another --log"
    )
    # The lock is the registry's: other users of the log (a stream application) still share the file.
    with open_log(url) as log:
        log.ensure_topic("orders", 1)
        assert log.producer().produce("orders", b"v", b"k", partition=0).offset == 0

    # A registry killed outright leaves no lock behind: the next one starts at once, with its data.
    httpx.post(f"{first.url}/subjects/s/versions", json={"schema": '"string"'}, timeout=30).raise_for_status()
    first.kill()
    second = start_registry(url)
    assert httpx.get(f"{second.url}/subjects", timeout=30).json() == ["s"]


@pytest.mark.kafka
def test_secrets_in_the_log_url_never_reach_the_output(
    start_registry: Callable[..., RegistryProcess], kafka_bootstrap: str
) -> None:
    # User info is SASL credentials; the test broker speaks plaintext, so the URL says so and the client
    # ignores them, which leaves every message the registry prints to look at.
    query = "security.protocol=PLAINTEXT&fetch.wait.max.ms=20&sasl.oauthbearer.client.secret=t0ken"
    node = start_registry(f"kafka://alice:s3cret@{kafka_bootstrap}?{query}")
    httpx.post(f"{node.url}/subjects/s/versions", json={"schema": '"string"'}, timeout=30)
    node.stop()
    output = node.log_file.read_text()
    assert f"log backend kafka, bootstrap {kafka_bootstrap}, topic _schemas" in output
    assert "s3cret" not in output and "t0ken" not in output

    message = serve_and_expect_refusal(f"kafka://alice:s3cret@{kafka_bootstrap}/path?{query}")
    assert message == (
        f"schemakit: cannot start: Kafka log URL 'kafka://alice:***@{kafka_bootstrap}/path?security.protocol="
        "PLAINTEXT&fetch.wait.max.ms=20&sasl.oauthbearer.client.secret=***' must not have a path or fragment, "
        "only hosts and ?options"
    )


def big_proto(messages: int) -> str:
    lines = ['syntax = "proto3";', "package big;"]
    fields = " ".join(f"int64 f{j} = {j + 1};" for j in range(10))
    lines += [f"message M{i} {{ {fields} }}" for i in range(messages)]
    return "\n".join(lines)


def test_a_protoc_timeout_answers_42201_naming_the_limit(start_registry: Callable[..., RegistryProcess]) -> None:
    node = start_registry(None, "--protoc-timeout-ms", "150")
    schema = big_proto(3000)  # ~0.5 MB: protoc needs well over 150 ms for it
    answer: list[httpx.Response] = []

    def register() -> None:
        with httpx.Client(timeout=60) as http:
            body = {"schemaType": "PROTOBUF", "schema": schema}
            answer.append(http.post(f"{node.url}/subjects/big/versions", json=body))

    with httpx.Client(base_url=node.url, timeout=30) as http:
        assert http.get("/subjects").status_code == 200  # a warm connection
        writer = threading.Thread(target=register)
        writer.start()
        latencies = []
        while writer.is_alive():
            started = time.monotonic()
            assert http.get("/subjects").json() == []
            latencies.append(time.monotonic() - started)
        writer.join()
    # protoc runs off the event loop: reads go on while it works (the median, not every read: the machine
    # running the suite may pause any one process now and then)
    assert len(latencies) >= 3, "the register request ended before reads could overlap it"
    assert statistics.median(latencies) < 0.1, latencies
    (r,) = answer
    assert r.status_code == 422
    assert r.json() == {
        "error_code": 42201,
        "message": "Invalid schema of type PROTOBUF, details: protoc did not finish compiling the schema within "
        "0.15s (the compile time limit); simplify the schema or its imports",
    }
    # protoc was stopped, not left running
    assert node.proc is not None
    tasks = Path(f"/proc/{node.proc.pid}/task")
    assert [c for t in tasks.iterdir() for c in (t / "children").read_text().split()] == []


def test_the_known_protos_directory_is_private_to_the_process(tmp_path: Path) -> None:
    script = (
        "import os, stat; from registry.schema_types.protoc import include_roots; root = include_roots()[0]; "
        "st = os.stat(root); print(root, oct(stat.S_IMODE(st.st_mode)), st.st_uid == os.getuid(), "
        "sorted(os.listdir(os.path.join(root, 'confluent'))))"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
        for _ in range(2)
    ]
    seen = [r.stdout.split(" ", 3) for r in runs]
    for root, mode, own, files in seen:
        assert (mode, own) == ("0o700", "True"), (root, mode, own)
        assert "meta.proto" in files
        assert not os.path.exists(root), f"{root} outlived its process"
    assert seen[0][0] != seen[1][0], "two processes shared one known-protos directory"
