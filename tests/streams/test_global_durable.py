"""Durable global tables, on SQLite and on the test broker: the store is RocksDB with an offset checkpoint by
default, so a restart reads only the records produced since (counted); a large table's memory stays flat
across a restart, against an in-memory table that reads everything again; a missing, corrupt or out-of-range
checkpoint wipes the store and reads the topic from the beginning; global stores answer over HTTP on every
instance; records that do not deserialize go through the deserialization handler.

On the test broker a partition's end offset is right only when its last produce batch held one record
(``tests/support/topics.py``); the tests end every partition with such a record, as a checkpointed offset past
the reported end would read as "out of range".
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from streams import DeserializationError, InvalidStateStoreError, StreamsApp, StreamsBuilder, TopologyTestDriver
from streams.app import AppState
from streams.global_state import GLOBAL_DIR
from streams.global_table import global_inputs
from streams.handlers import handler_from
from streams.log import Log
from streams.log.base import Record
from streams.topology import Topology
from tests.streams.scenarios import pipe, read_rows
from tests.support import REPO_ROOT
from tests.support.ports import free_port
from tests.support.topics import create_topics, last_values, produce, read_to_end
from tests.support.waiting import wait_for

PARTITIONS = 4
ROWS = {f"c{i:03d}": {"region": f"r{i % 7}"} for i in range(400)}


def enrich(order: dict[str, Any], row: dict[str, Any] | None) -> dict[str, Any]:
    return {**order, "region": None if row is None else row["region"]}


def topology(rows: str, orders: str, out: str, kind: str | None = None) -> Topology:
    b = StreamsBuilder()
    table = b.global_table(rows, key=str, value="json", store="rows", kind=kind)
    b.stream(orders, key=str, value="json").left_join(table, lambda k, o: o["row"], enrich).to(
        out, key=str, value="json"
    )
    return b.build()


def produce_exact(lg: Log, topic: str, items: list[tuple[str, Any]]) -> None:
    """One record per produce batch, round-robin over the partitions: every partition's end offset is exact
    afterwards, also on the test broker."""
    with lg.producer() as p:
        for i, (k, v) in enumerate(items):
            p.send(topic, None if v is None else orjson.dumps(v), k.encode(), partition=i % PARTITIONS)
            p.flush()


def fill(lg: Log, topic: str, rows: dict[str, Any]) -> None:
    """``rows`` in big batches, then one single-record batch per partition (exact end offsets)."""
    items = list(rows.items())
    produce(lg, topic, items[:-PARTITIONS])
    produce_exact(lg, topic, items[-PARTITIONS:])


@pytest.fixture
def topics(log: Log, names: Callable[[str], str]) -> tuple[str, str, str, str]:
    rows, orders, out, app_id = names("rows"), names("orders"), names("enriched"), names("durable")
    create_topics(log, PARTITIONS, rows, orders, out)
    return rows, orders, out, app_id


def app_of(log_url: str, topics: tuple[str, str, str, str], state_dir: Path, **options: Any) -> StreamsApp:
    rows, orders, out, app_id = topics
    kind = options.pop("kind", None)
    return StreamsApp(
        topology(rows, orders, out, kind), app_id, log_url, state_dir=state_dir, commit_interval_ms=100, **options
    )


def test_a_restart_reads_only_the_tail(
    log: Log, log_url: str, topics: tuple[str, str, str, str], tmp_path: Path
) -> None:
    rows_t, orders_t, out, _ = topics
    fill(log, rows_t, ROWS)
    with app_of(log_url, topics, tmp_path / "s") as app:
        assert app.metrics()["global"]["restored"] == len(ROWS)
        assert app.store("rows").get("c005") == {"region": "r5"}
        produce(log, orders_t, [("o1", {"row": "c005"})])
        wait_for(lambda: last_values(read_to_end(log, out, quiet=0.3)) == {"o1": {"row": "c005", "region": "r5"}})
    tail = [("c001", {"region": "moved"}), ("c002", None), ("new1", {"region": "n"}), ("c399", None)]
    tail += [("new2", {"region": "m"}), ("c003", {"region": "x"}), ("c004", {"region": "y"})]
    produce_exact(log, rows_t, tail)
    reference = dict(ROWS)
    for k, v in tail:
        if v is None:
            reference.pop(k)
        else:
            reference[k] = v
    with app_of(log_url, topics, tmp_path / "s") as app:
        assert app.metrics()["global"]["restored"] == len(tail)  # only what was produced since the close
        assert dict(app.store("rows").all()) == reference
        produce(log, orders_t, [("o2", {"row": "c001"}), ("o3", {"row": "c002"})])
        expected = {"o2": {"row": "c001", "region": "moved"}, "o3": {"row": "c002", "region": None}}
        wait_for(lambda: expected.items() <= last_values(read_to_end(log, out, quiet=0.3)).items(), what="the joins")
        # followed while running, and checkpointed at the close
        produce_exact(log, rows_t, [("c010", {"region": "late"})])
        wait_for(lambda: app.store("rows").get("c010") == {"region": "late"}, what="the update")
    with app_of(log_url, topics, tmp_path / "s") as app:
        assert app.metrics()["global"]["restored"] == 0
        assert app.store("rows").get("c010") == {"region": "late"}
    with pytest.raises(InvalidStateStoreError, match="global store 'rows' is not open: the app is NOT_RUNNING"):
        app.store("rows")
    with app_of(log_url, topics, tmp_path / "m", kind="memory") as app:  # in memory: everything, every time
        assert app.metrics()["global"]["restored"] == len(ROWS) + len(tail) + 1
        assert not (tmp_path / "m" / topics[3] / GLOBAL_DIR / ".checkpoint").exists()


def run_instance(log_url: str, app_id: str, state_dir: Path, topic: str, kind: str) -> dict[str, Any]:
    """``tests/streams/global_table_runner.py`` in a process of its own: what its start read, and its RSS growth."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.streams.global_table_runner", log_url, app_id, str(state_dir), topic, kind],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.slow
def test_a_large_global_table_restarts_with_flat_memory(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    # 400,000 rows on SQLite; 150,000 on the test broker (its client reads slower: under 30 s on a busy machine).
    # Enough for both checks below to tell: a restart that read the whole table into memory would grow by
    # about 100 MB here, and the in-memory table's growth is that far from the flat restart's.
    size = 400_000 if log_url.startswith("sqlite") else 150_000
    topic, app_id = names("big"), names("big-app")
    create_topics(log, PARTITIONS, topic, f"{topic}-orders", f"{topic}-out")
    with log.producer() as p:
        for i in range(size - PARTITIONS):
            p.send(topic, b"v%d" % i, b"k%07d" % i)
        p.flush()
    produce_exact(log, topic, [(f"k{i:07d}", i) for i in range(size - PARTITIONS, size)])
    first = run_instance(log_url, app_id, tmp_path / "r", topic, "rocksdb")
    assert first["restored"] == size
    tail = [(f"k{i:07d}", i) for i in range(0, 40, 4)] + [("extra", 1)]
    produce_exact(log, topic, tail)
    restart = run_instance(log_url, app_id, tmp_path / "r", topic, "rocksdb")
    in_memory = run_instance(log_url, app_id + "-m", tmp_path / "m", topic, "memory")
    assert restart["restored"] == len(tail)
    assert in_memory["restored"] == size + len(tail)
    assert in_memory["entries"] == size + 1
    # RocksDB's restart reads the tail into a store on disk: its growth does not depend on the table's size
    # (measured: 10 MB on SQLite, 16 MB with the broker's client). The in-memory table holds every row again
    # (measured: about 250 bytes a row more than the restart).
    figures = (first, restart, in_memory)
    assert restart["rss_growth_kb"] < 40_000, figures
    assert (in_memory["rss_growth_kb"] - restart["rss_growth_kb"]) * 1024 > size * 120, figures


def test_after_a_kill_the_restart_reads_from_the_last_checkpoint(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    topic, app_id = names("killed"), names("killed-app")
    create_topics(log, PARTITIONS, topic, f"{topic}-orders", f"{topic}-out")
    rows = [(f"k{i:07d}", i) for i in range(2000)]
    produce(log, topic, rows[:-PARTITIONS], value=lambda v: str(v).encode())
    produce_exact(log, topic, rows[-PARTITIONS:])
    server = f"http://127.0.0.1:{free_port()}"
    args = [log_url, app_id, str(tmp_path / "s"), topic, "rocksdb"]
    runner = subprocess.Popen(
        [sys.executable, "-m", "tests.streams.global_table_runner", *args, server],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert runner.stdout is not None
        assert json.loads(runner.stdout.readline())["restored"] == len(rows)
        # Fewer than 10,000 records after the start-up checkpoint: no checkpoint is written before the kill.
        tail = [("k0000000", "new"), ("k0000001", None), ("added", "x")]
        produce_exact(log, topic, tail)

        def served() -> Any:
            with httpx.Client(timeout=5) as client:
                return client.get(f"{server}/v1/stores/rows/keys/added").status_code == 200

        wait_for(served, what="the tail applied by the running instance")
    finally:
        runner.kill()  # SIGKILL: no close, no checkpoint
        runner.wait()
    restart = run_instance(log_url, app_id, tmp_path / "s", topic, "rocksdb")
    assert restart["restored"] == len(tail)  # from the start-up checkpoint: the tail again, nothing before it
    assert restart["sample"] == '"new"'  # produced as JSON, read with the str serde


def test_a_missing_corrupt_or_out_of_range_checkpoint_reads_from_the_start(
    log: Log, log_url: str, topics: tuple[str, str, str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rows_t, _, _, app_id = topics
    fill(log, rows_t, ROWS)
    state = tmp_path / "s"
    checkpoint = state / app_id / GLOBAL_DIR / ".checkpoint"
    with app_of(log_url, topics, state):
        pass
    assert checkpoint.exists()
    caplog.set_level(logging.WARNING)
    checkpoint.write_bytes(b"{not json")
    with app_of(log_url, topics, state) as app:
        assert app.metrics()["global"]["restored"] == len(ROWS)
        assert dict(app.store("rows").all()) == ROWS
    assert "ignoring unreadable checkpoint" in caplog.text
    assert "global store rows: no checkpointed offsets" in caplog.text and "wiping it" in caplog.text
    caplog.clear()
    checkpoint.unlink()
    with app_of(log_url, topics, state) as app:
        assert app.metrics()["global"]["restored"] == len(ROWS)
    assert "wiping it and reading" in caplog.text
    caplog.clear()
    # The topic is re-created with other rows: the checkpointed offsets are past its end. Rows of the old
    # topic must not survive in the store.
    log.delete_topic(rows_t)
    wait_for(lambda: log.describe_topic(rows_t) is None, what="the topic deleted")
    create_topics(log, PARTITIONS, rows_t)
    fresh = {f"f{i}": {"region": "z"} for i in range(8)}
    produce_exact(log, rows_t, list(fresh.items()))
    with app_of(log_url, topics, state) as app:
        assert app.metrics()["global"]["restored"] == len(fresh)
        assert dict(app.store("rows").all()) == fresh
    assert "is out of its range" in caplog.text


# -- reads from other threads --------------------------------------------------------------------------------


def test_a_rocksdb_global_view_never_keeps_a_value_a_write_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (table,) = global_inputs(
        topology("rows", "orders", "out"), handler_from("fail"), print, tmp_path, "rocksdb", 10
    ).values()
    offsets = iter(range(100))

    def write(key: bytes, value: Any) -> None:  # what the global thread does with a record of the topic
        offset = next(offsets)
        table.apply([Record("rows", 0, offset, key, orjson.dumps(value), offset, ())])

    view = table.view
    write(b"k", {"v": 0})
    assert view.get("k") == {"v": 0}  # now cached
    write(b"k", {"v": 1})
    assert view.get("k") == {"v": 1}  # the write forgot it
    # The global thread writes between a reader's RocksDB read and its cache insert (the reader was preempted):
    write(b"j", {"v": 0})
    peek = table.store.peek

    def read_then_write(key: Any) -> Any:
        value = peek(key)
        write(b"j", {"v": 1})
        return value

    monkeypatch.setattr(table.store, "peek", read_then_write)
    assert view.get("j") == {"v": 0}  # the value as of the read
    monkeypatch.setattr(table.store, "peek", peek)
    assert view.get("j") == {"v": 1}  # not the raced value, kept in the cache
    for i in range(30):  # more keys than the cache holds: it starts over, and answers stay right
        write(f"n{i}".encode(), {"v": i})
        assert view.get(f"n{i}") == {"v": i}
    assert view.get("j") == {"v": 1} and view.get("k") == {"v": 1}
    table.store.close()


# -- deserialization errors --------------------------------------------------------------------------------


def test_the_driver_skips_a_global_record_that_does_not_deserialize() -> None:
    t = topology("rows", "orders", "out")
    with TopologyTestDriver(t, deserialization_error_handler="skip") as d:
        rows = d.input_topic("rows", key=str, value="json")
        rows.pipe_input("c1", {"region": "eu"})
        rows.pipe_raw(b"c2", b"{not json")
        rows.pipe_raw(b"c1", b"\xff")  # a bad update leaves the row as it was
        rows.pipe_input("c3", {"region": "na"})
        pipe(d, "orders", [("o1", {"row": "c1"}, 5), ("o2", {"row": "c2"}, 6)], str, "json")
        assert read_rows(d, "out", str, "json") == [
            ("o1", {"row": "c1", "region": "eu"}, 5),
            ("o2", {"row": "c2", "region": None}, 6),
        ]
        assert sorted(d.get_key_value_store("rows").all()) == [("c1", {"region": "eu"}), ("c3", {"region": "na"})]


def bad_rows(lg: Log, topic: str) -> None:
    """Six rows; the record at partition 1 offset 1 has a value that is not JSON."""
    produce_exact(lg, topic, [("a", {"region": "1"}), ("b", {"region": "2"}), ("c", {"region": "3"})])
    with lg.producer() as p:
        p.send(topic, b"{not json", b"bad", partition=1)
        p.flush()
    produce_exact(lg, topic, [("d", {"region": "4"}), ("e", {"region": "5"})])


def test_log_and_continue_skips_and_counts_global_records(
    log: Log, log_url: str, topics: tuple[str, str, str, str], tmp_path: Path
) -> None:
    rows_t = topics[0]
    bad_rows(log, rows_t)
    with app_of(log_url, topics, tmp_path / "s", deserialization_error_handler="skip") as app:
        glob = app.metrics()["global"]
        assert (glob["restored"], glob["skipped"]) == (6, 1)
        assert sorted(k for k, _ in app.store("rows").all()) == ["a", "b", "c", "d", "e"]
        with log.producer() as p:  # while running: skipped too, and the table goes on
            p.send(rows_t, b"\x00", b"bad2", partition=2)
            p.flush()
        produce_exact(log, rows_t, [("f", {"region": "6"})])
        wait_for(lambda: app.store("rows").get("f") == {"region": "6"}, what="the row after the bad one")
        assert app.metrics()["global"]["skipped"] == 2
        assert app.state != AppState.ERROR


def test_a_dead_letter_handler_gets_the_global_record_as_read(
    log: Log, log_url: str, topics: tuple[str, str, str, str], tmp_path: Path, names: Callable[[str], str]
) -> None:
    rows_t, dlq = topics[0], names("dlq")
    create_topics(log, 1, dlq)
    bad_rows(log, rows_t)
    with app_of(log_url, topics, tmp_path / "s", deserialization_error_handler=f"dead_letter:{dlq}") as app:
        assert app.metrics()["global"]["skipped"] == 1
        assert app.store("rows").get("bad") is None
    (dead,) = read_to_end(log, dlq, quiet=0.5)
    assert (dead.key, dead.value) == (b"bad", b"{not json")
    headers = dict(dead.headers)
    assert (headers["schemakit.dlq.topic"], headers["schemakit.dlq.partition"]) == (rows_t.encode(), b"1")
    assert headers["schemakit.dlq.offset"] == b"1"


def test_log_and_fail_stops_naming_the_record(
    log: Log, log_url: str, topics: tuple[str, str, str, str], tmp_path: Path
) -> None:
    rows_t = topics[0]
    bad_rows(log, rows_t)
    app = app_of(log_url, topics, tmp_path / "s")
    try:
        with pytest.raises(DeserializationError, match=rf"the value of the record at {rows_t}\[1\] offset 1"):
            app.start()
    finally:
        app.close()
    # While running: the app goes to ERROR with the error.
    topics2 = (rows_t + "-2", *topics[1:3], topics[3] + "-2")
    create_topics(log, PARTITIONS, topics2[0])
    produce_exact(log, topics2[0], [("a", {"region": "1"})])
    with app_of(log_url, topics2, tmp_path / "t") as app:
        with log.producer() as p:
            p.send(topics2[0], b"{not json", b"bad", partition=3)
            p.flush()
        wait_for(lambda: app.state == AppState.ERROR, what="the app to stop")
        assert isinstance(app.error, DeserializationError)
        assert f"{topics2[0]}[3] offset 0" in str(app.error)


# -- HTTP ----------------------------------------------------------------------------------------------------


@pytest.fixture
def two_servers(
    log: Log, log_url: str, topics: tuple[str, str, str, str], tmp_path: Path
) -> Iterator[tuple[StreamsApp, StreamsApp]]:
    fill(log, topics[0], ROWS)
    with ExitStack() as stack:
        apps = [
            stack.enter_context(
                app_of(
                    log_url,
                    topics,
                    tmp_path / name,
                    application_server=f"http://127.0.0.1:{free_port()}",
                    session_timeout_ms=4000,
                )
            )
            for name in ("first", "second")
        ]
        wait_for(lambda: all(len(a.all_metadata()) == 2 for a in apps), what="both instances in the metadata")
        yield apps[0], apps[1]


def test_global_stores_answer_over_http_on_every_instance(two_servers: tuple[StreamsApp, StreamsApp]) -> None:
    with httpx.Client(timeout=10) as client:
        for app in two_servers:
            base = app.config.application_server
            got = client.get(f"{base}/v1/stores/rows/keys/c042")
            assert got.status_code == 200, got.text
            assert got.json() == {
                "key": "c042",
                "value": {"region": "r0"},
                "partition": -1,
                "instance": app.instance_id,  # answered where it was asked
                "stale": False,
            }
            missing = client.get(f"{base}/v1/stores/rows/keys/nope")
            assert missing.status_code == 404
            assert missing.json() == {"error_code": 40402, "message": "key 'nope' not found in store 'rows'"}
            everything = client.get(f"{base}/v1/stores/rows/all").json()
            assert [(i["key"], i["value"]) for i in everything["items"]] == sorted(ROWS.items())
            some = client.get(f"{base}/v1/stores/rows/range", params={"from": "c010", "to": "c013"}).json()
            assert [i["key"] for i in some["items"]] == ["c010", "c011", "c012", "c013"]
            meta = client.get(f"{base}/v1/stores/rows/keys/c042/metadata").json()
            assert meta == {
                "active": {"instance": app.instance_id, "server": base},
                "standbys": [],
                "partition": -1,
                "task": "",
            }
            holders = client.get(f"{base}/v1/stores/rows/metadata").json()["instances"]
            assert sorted(h["host"]["instance"] for h in holders) == sorted(a.instance_id for a in two_servers)
            assert all("rows" in m.stores for m in app.all_metadata())
            assert app.query_metadata_for_key("rows", "c042").partition == -1
            unknown = client.get(f"{base}/v1/stores/nothing/keys/x")
            assert unknown.status_code == 404 and unknown.json()["error_code"] == 40401
