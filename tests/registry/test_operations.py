"""Operating the registry: Prometheus ``/metrics``, ``/health/live``, ``/health/ready``, Karapace's ``/_health``,
JSON log lines, and a SIGTERM that lets acknowledged writes finish."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from registry.logs import JsonFormatter
from registry.schemas_topic import Key, schema_value
from streams.log import open_log
from tests.registry.schemas import record
from tests.support.ports import free_port
from tests.support.registry_process import RegistryProcess
from tests.support.waiting import poll_until

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def scrape(c: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics``, parsed by prometheus_client's own parser: (name, labels) -> value."""
    r = c.get("/metrics", headers={"Accept": "text/plain"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


def sample(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_parse_and_move_with_requests(registry_url: str, subject: str) -> None:
    by_id = {"method": "GET", "route": "/schemas/ids/{id}", "status": "200"}
    with httpx.Client(base_url=registry_url, timeout=30) as c:
        v1 = record("M", ("a", "string"))
        sid = c.post(f"/subjects/{subject}/versions", json={"schema": v1}, headers=CT).json()["id"]
        before = scrape(c)
        for _ in range(3):  # a miss, then two answers from the read cache
            assert c.get(f"/schemas/ids/{sid}").status_code == 200
        assert c.get(f"/subjects/{subject}/versions/7").status_code == 404
        assert c.get("/no/such/path").status_code == 404
        r = c.post(f"/subjects/{subject}/versions", json={"schema": record("M", ("b", "int"))}, headers=CT)
        assert r.status_code == 409
        r = c.post(f"/compatibility/subjects/{subject}/versions/latest", json={"schema": v1}, headers=CT)
        assert r.json() == {"is_compatible": True}
        after = scrape(c)

    def moved(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    prefix = "schemakit_registry_"
    assert moved(prefix + "http_requests_total", **by_id) == 3  # read-cache hits count too
    assert moved(prefix + "read_cache_hits_total") == 2
    assert moved(prefix + "read_cache_misses_total") == 2  # /schemas/ids/{id} once, the 40402 once
    by_id_route = {"method": "GET", "route": "/schemas/ids/{id}"}
    assert moved(prefix + "http_request_duration_seconds_count", **by_id_route) == 3
    assert moved(prefix + "http_request_duration_seconds_bucket", **by_id_route, le="+Inf") == 3
    assert moved(prefix + "http_request_duration_seconds_sum", **by_id_route) > 0
    version_route = {"method": "GET", "route": "/subjects/{subject}/versions/{version}"}
    assert moved(prefix + "http_requests_total", **version_route, status="404") == 1
    assert moved(prefix + "http_requests_total", method="GET", route="<unmatched>", status="404") == 1
    register = {"method": "POST", "route": "/subjects/{subject}/versions", "status": "409"}
    assert moved(prefix + "http_requests_total", **register) == 1
    assert moved(prefix + "compatibility_checks_total", result="incompatible") == 1
    assert moved(prefix + "compatibility_checks_total", result="compatible") == 1
    assert moved(prefix + "schemas", context=".") == 0
    assert sample(after, prefix + "schemas", context=".") >= sid
    assert sample(after, prefix + "subjects", context=".") >= 1
    assert sample(after, prefix + "leader") == 1 and sample(after, prefix + "leader_known") == 1
    assert sample(after, prefix + "ready") == 1
    offset, end = sample(after, prefix + "log_offset"), sample(after, prefix + "log_end_offset")
    assert offset == end and sample(after, prefix + "log_lag") == 0
    assert sample(after, prefix + "replay_seconds") > 0
    assert sample(after, "process_resident_memory_bytes") > 0


def test_health_endpoints_and_karapace_shape(registry_url: str) -> None:
    with httpx.Client(base_url=registry_url, timeout=30) as c:
        for path in ("/health/live", "/health/ready"):
            r = c.get(path, headers={"Accept": "text/plain, */*;q=0.1"})  # probes send their own Accept
            assert (r.status_code, r.json()) == (200, {"status": "UP"})
        r = c.get("/_health", headers={"Accept": "text/html"})
        assert r.status_code == 200
        body = r.json()
        assert set(body) == {"karapace_version", "status", "healthy"} and body["healthy"] is True
        status = body["status"]
        assert status == {
            "schema_registry_ready": True,
            "schema_registry_startup_time_sec": status["schema_registry_startup_time_sec"],
            "schema_registry_reader_current_offset": status["schema_registry_reader_current_offset"],
            "schema_registry_reader_highest_offset": status["schema_registry_reader_current_offset"],
            "schema_registry_is_primary": True,
            "schema_registry_is_primary_eligible": True,
            "schema_registry_primary_url": None,
            "schema_registry_coordinator_running": False,
            "schema_registry_coordinator_generation_id": -1,
        }
        assert status["schema_registry_startup_time_sec"] > 0 and status["schema_registry_reader_current_offset"] >= 0
        assert "/health/ready" not in c.get("/openapi.json").text  # not part of Confluent's API


def write_log(path: Path, records: int) -> None:
    """A ``_schemas`` log with ``records`` SCHEMA records (1000 subjects), written straight to SQLite."""
    log = open_log(f"sqlite:///{path}")
    try:
        log.ensure_topic("_schemas", 1, compacted=True)
        producer = log.producer()
        for i in range(records):
            subject, version = f"s{i % 1000}", i // 1000 + 1
            value = schema_value(
                subject=subject,
                version=version,
                schema_id=i + 1,
                schema_type="AVRO",
                schema=f'{{"type":"fixed","name":"F{i}","size":1}}',
                references=[],
                metadata=None,
                rule_set=None,
                deleted=False,
            )
            producer.send("_schemas", value, Key("SCHEMA", subject, version).encode(), partition=0)
        producer.flush()
        producer.close()
    finally:
        log.close()


def test_readiness_flips_during_the_replay(tmp_path: Path) -> None:
    write_log(tmp_path / "data", 20_000)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with (tmp_path / "server.log").open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "registry", "serve", "--log", f"sqlite:///{tmp_path / 'data'}", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        seen: list[int] = []
        api_during_replay = None
        with httpx.Client(base_url=url, timeout=5) as c:

            def readiness() -> int:
                nonlocal api_during_replay
                r = c.get("/health/ready")
                seen.append(r.status_code)
                if r.status_code == 503:
                    assert r.json() == {"status": "DOWN", "checks": {"replay": "replaying _schemas"}}
                    assert c.get("/health/live").status_code == 200  # starting is not dead
                    if api_during_replay is None:
                        api_during_replay = c.get("/subjects")
                return r.status_code

            poll_until(
                readiness,
                lambda status: status == 200,
                timeout=60,
                interval=0.01,
                what="the registry to be ready",
                ignoring=(httpx.TransportError,),
            )
            assert 503 in seen and seen[-1] == 200, seen  # not ready while replaying, then ready
            assert api_during_replay is not None
            assert api_during_replay.status_code == 503 and api_during_replay.headers["retry-after"] == "1"
            assert api_during_replay.json()["error_code"] == 503
            assert len(c.get("/subjects").json()) == 1000  # ready means replayed
            assert c.get("/schemas/ids/20000").status_code == 200
            metrics = c.get("/metrics").text
            assert "schemakit_registry_replay_records 20001.0" in metrics  # the records and the startup NOOP
    finally:
        proc.terminate()
        proc.wait(20)


def test_json_log_lines(start_registry: Callable[..., RegistryProcess]) -> None:
    rp = start_registry(None, "--log-format", "json")
    with httpx.Client(base_url=rp.url, timeout=30) as c:
        assert c.get("/subjects").status_code == 200
    rp.stop()
    lines = [line for line in rp.log_file.read_text().splitlines() if line.strip()]
    assert len(lines) >= 5
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    for r in records:
        assert {"time", "level", "logger", "message"} <= set(r), r
        assert r["time"].endswith("Z") and r["level"] in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
    serving = [r for r in records if r["message"].startswith("serving the Confluent Schema Registry API")]
    assert serving and serving[0]["url"] == rp.url  # an extra field
    assert any(r["message"].startswith("stopping:") and r["in_flight"] == 0 for r in records)


def test_json_formatter_fields() -> None:
    rec = logging.LogRecord("registry.x", logging.WARNING, __file__, 1, "hello %s", ("there",), None)
    rec.subject = "orders"
    rec.path = Path("/tmp/x")  # not a JSON type: written as str
    try:
        raise ValueError("boom")
    except ValueError:
        rec.exc_info = sys.exc_info()
    out = json.loads(JsonFormatter().format(rec))
    assert out["message"] == "hello there" and out["level"] == "WARNING" and out["logger"] == "registry.x"
    assert out["subject"] == "orders" and out["path"] == "/tmp/x"
    assert "ValueError: boom" in out["exception"]


def test_sigterm_keeps_every_acknowledged_write(start_registry: Callable[..., RegistryProcess]) -> None:
    """Writers run until the server goes away; SIGTERM arrives mid-stream. Every write that got its 200 is in the
    log after a restart, and at least one write that was in flight when the signal came finished with a 200."""
    rp = start_registry(None, "--log-level", "INFO")
    acked: list[tuple[str, int]] = []
    straddling = []
    stop_sent = threading.Event()
    tag = uuid.uuid4().hex[:6]

    def writer(n: int) -> None:
        with httpx.Client(base_url=rp.url, timeout=30) as c:
            for i in range(10_000):
                subject = f"w{tag}-{n}-{i}"
                began_before_signal = not stop_sent.is_set()
                try:
                    r = c.post(
                        f"/subjects/{subject}/versions", json={"schema": record(f"R{n}x{i}", ("a", "long"))}, headers=CT
                    )
                except httpx.TransportError:
                    return  # the server closed: no acknowledgement
                if r.status_code != 200:
                    return
                acked.append((subject, r.json()["id"]))
                if began_before_signal and stop_sent.is_set():
                    straddling.append(subject)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    time.sleep(1.5)
    assert rp.proc is not None
    stop_sent.set()
    os.kill(rp.proc.pid, signal.SIGTERM)
    for t in threads:
        t.join(60)
    # uvicorn re-raises the signal once it has shut down, so the exit is "terminated by SIGTERM", after the log
    # was closed ("stopped").
    assert rp.proc.wait(30) == -signal.SIGTERM
    assert len(acked) > 20 and straddling, (len(acked), straddling)
    log_text = rp.log_file.read_text()
    assert "stopping: no new connections" in log_text and log_text.rstrip().endswith("stopped")

    rp.start()
    with httpx.Client(base_url=rp.url, timeout=30) as c:
        subjects = set(c.get("/subjects").json())
        for subject, schema_id in acked:
            assert subject in subjects
            assert c.get(f"/subjects/{subject}/versions/1").json()["id"] == schema_id


def test_operations_endpoints_are_not_cached(registry_url: str) -> None:
    with httpx.Client(base_url=registry_url, timeout=30) as c:
        first = scrape(c)
        for path in ("/health/live", "/health/ready", "/_health", "/metrics", "/health/live"):
            c.get(path)
        second = scrape(c)
    hits = "schemakit_registry_read_cache_hits_total"
    assert sample(second, hits) == sample(first, hits)
