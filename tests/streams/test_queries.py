"""Interactive queries over HTTP with two instances, each with its own state directory and query server:
every key answered from either instance (routed to its owner), ranges and ``all`` complete by fan-out,
the metadata endpoints and ``query_metadata_for_key``, Prometheus metrics; and a failover (the other
instance kill -9'd): 503 with ``Retry-After`` while its tasks have no live owner, a standby's copy with
``include_standby=true``, the new owner's answer once the session timed out. Key lookups on plain sockets
exercise the server's own protocol for them (pipelining, a request in pieces, the hand-over to uvicorn)."""

from __future__ import annotations

import dataclasses
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from streams import StreamsApp, StreamsBuilder, StreamsError
from streams.log import Log, open_log
from streams.log.partitioner import partition_for_key
from streams.query_server import to_json
from tests.streams.instances import Instance
from tests.streams.topologies import key_counts, two_served_instances
from tests.support.ports import free_port
from tests.support.topics import create_topics, produce
from tests.support.waiting import wait_for

PARTITIONS = 4
KEYS = [f"k{i:02d}" for i in range(40)]
# Each key counted (i % 3) + 1 times.
EXPECTED = {k: i % 3 + 1 for i, k in enumerate(KEYS)}


def _feed(lg: Log, topic: str) -> None:
    produce(lg, topic, [(k, {"v": n}) for k, count in EXPECTED.items() for n in range(count)])


@pytest.fixture
def two_instances(log_url: str, tmp_path: Path, names: Callable[[str], str]) -> Iterator[tuple[StreamsApp, StreamsApp]]:
    lg = open_log(log_url)
    src, out, app_id = names("in"), names("out"), names("queries")
    create_topics(lg, PARTITIONS, src, out)
    _feed(lg, src)

    with two_served_instances(src, out, app_id, log_url, tmp_path) as (first, second):
        wait_for(lambda: len(first.tasks()) == len(second.tasks()) == PARTITIONS // 2, what="two tasks each")
        wait_for(
            lambda: sum(v for a in (first, second) for _, v in a.store("counts").all()) == sum(EXPECTED.values()),
            what="every record counted",
        )
        yield first, second
    lg.close()


def test_every_key_from_either_instance_and_complete_ranges(two_instances: tuple[StreamsApp, StreamsApp]) -> None:
    first, second = two_instances
    servers = {app.instance_id: app.config.application_server for app in (first, second)}
    routed = 0
    with httpx.Client(timeout=10) as client:
        for app in (first, second):
            for key, count in EXPECTED.items():
                r = client.get(f"{app.config.application_server}/v1/stores/counts/keys/{key}")
                assert r.status_code == 200, r.text
                owner = app.query_metadata_for_key("counts", key)
                assert owner.active is not None and owner.partition == partition_for_key(key.encode(), PARTITIONS)
                assert r.json() == {
                    "key": key,
                    "value": count,
                    "partition": owner.partition,
                    "instance": owner.active.instance,
                    "stale": False,
                }
                routed += owner.active.instance != app.instance_id
        assert routed == len(KEYS)  # each key was owned by exactly one of the two, so asked of the other once

        # Key metadata over HTTP is the app's, with servers as published.
        meta = first.query_metadata_for_key("counts", "k07")
        assert meta.active is not None and meta.active.server == servers[meta.active.instance]
        assert [h.instance for h in meta.standbys] == [i for i in servers if i != meta.active.instance]
        r = client.get(f"{second.config.application_server}/v1/stores/counts/keys/k07/metadata")
        assert r.json() == dataclasses.asdict(meta)

        # Ranges and all: complete and in key order, whichever instance is asked.
        for app in (first, second):
            base = f"{app.config.application_server}/v1/stores/counts"
            r = client.get(f"{base}/all")
            assert r.status_code == 200 and r.json()["stale_partitions"] == []
            assert [(i["key"], i["value"]) for i in r.json()["items"]] == sorted(EXPECTED.items())
            r = client.get(f"{base}/range", params={"from": "k05", "to": "k12"})
            assert [(i["key"], i["value"]) for i in r.json()["items"]] == [
                (k, v) for k, v in sorted(EXPECTED.items()) if "k05" <= k <= "k12"
            ]

        # The application's metadata: both instances, every task active once and standby once.
        body = client.get(f"{first.config.application_server}/v1/metadata").json()
        assert {m["host"]["instance"]: m["host"]["server"] for m in body["instances"]} == servers
        tasks = sorted(t for m in body["instances"] for t in m["tasks"])
        standbys = sorted(t for m in body["instances"] for t in m["standby_tasks"])
        assert tasks == standbys == [f"0_{p}" for p in range(PARTITIONS)]
        assert all(m["stores"] == ["counts"] == m["standby_stores"] for m in body["instances"])

        def lags_reported() -> bool:
            instances = client.get(f"{first.config.application_server}/v1/metadata").json()["instances"]
            return all(m["lags"] == dict.fromkeys(m["tasks"] + m["standby_tasks"], 0) for m in instances)

        wait_for(lags_reported, what="every task's lag reported, standbys caught up")
        assert first.all_metadata_for_store("counts") == first.all_metadata()

        # Client mistakes get Confluent-style errors.
        r = client.get(f"{first.config.application_server}/v1/stores/counts/keys/nope")
        assert (r.status_code, r.json()["error_code"]) == (404, 40402)
        assert r.json()["message"] == "key 'nope' not found in store 'counts'"
        r = client.get(f"{first.config.application_server}/v1/stores/nothing/keys/k01")
        assert (r.status_code, r.json()["error_code"]) == (404, 40401)

        # Prometheus: per task records processed, labelled with application, thread and task.
        text = client.get(f"{first.config.application_server}/metrics").text
        m = first.metrics()
        for task in first.tasks():
            processed = m["task_states"][task]["processed"]
            assert processed > 0
            line = (
                f'schemakit_streams_task_records_processed_total{{application_id="{first.application_id}",'
                f'task="{task}",thread="{first.application_id}-StreamThread-0"}} {float(processed)}'
            )
            assert line in text.splitlines()
        assert f'schemakit_streams_rebalances_total{{application_id="{first.application_id}"' in text
        thread = m["threads"][f"{first.application_id}-StreamThread-0"]
        assert thread["commits"] > 0 and thread["commit_seconds"] > 0
        assert f'schemakit_streams_thread_commits_total{{application_id="{first.application_id}"' in text
        for task in first.standby_tasks():  # caught up (waited for above)
            assert (
                f'schemakit_streams_task_standby_lag_records{{application_id="{first.application_id}",'
                f'task="{task}",thread="{first.application_id}-StreamThread-0"}} 0.0'
            ) in text.splitlines()


@dataclasses.dataclass
class Total:
    count: int
    amount: float
    tags: frozenset[str]


def _decode_total(raw: bytes) -> Total:
    data = orjson.loads(raw)
    return Total(data["count"], data["amount"], frozenset(data["tags"]))


def test_int_keys_and_dataclass_values_over_http(tmp_path: Path, names: Callable[[str], str]) -> None:
    url = f"sqlite:///{tmp_path / 'log'}"
    lg = open_log(url)
    src, app_id = names("orders"), names("typed")
    lg.create_topic(src, 2)
    orders = [(7, 10.0), (7, 2.5), (12, 1.0)]
    produce(lg, src, orders, key=lambda k: k.to_bytes(8, "big"), value=lambda v: orjson.dumps({"amount": v}))
    produce(lg, src, [(b"bad", 1.0)], key=bytes, value=lambda v: orjson.dumps({"amount": v}))  # not an 8-byte key
    b = StreamsBuilder()
    (
        b.stream(src, key=int, value="json")
        .group_by_key()
        .aggregate(
            initial=lambda: Total(0, 0.0, frozenset()),
            add=lambda _, o, t: Total(t.count + 1, t.amount + o["amount"], t.tags | {"paid"}),
            store="totals",
            value=(to_json, _decode_total),
        )
    )
    app = StreamsApp(
        b.build(),
        app_id,
        url,
        state_dir=tmp_path / "state",
        commit_interval_ms=100,
        deserialization_error_handler="skip",
        application_server=f"http://127.0.0.1:{free_port()}",
    )
    with app, httpx.Client(timeout=10) as client:
        base = f"{app.config.application_server}/v1/stores/totals"
        wait_for(lambda: client.get(f"{base}/keys/12").status_code == 200, what="the totals")
        wait_for(lambda: client.get(f"{base}/keys/7").json().get("value", {}).get("count") == 2, what="key 7")
        assert client.get(f"{base}/keys/7").json()["value"] == {"count": 2, "amount": 12.5, "tags": ["paid"]}
        assert [i["key"] for i in client.get(f"{base}/all").json()["items"]] == [7, 12]
        assert [i["key"] for i in client.get(f"{base}/range", params={"from": "8"}).json()["items"]] == [12]
        r = client.get(f"{base}/keys/seven")
        assert (r.status_code, r.json()["error_code"]) == (422, 42201)
        assert "'seven' is not a IntSerde key" in r.json()["message"]
        _raw_connections(app.config.application_server, {k: client.get(f"{base}/keys/{k}").content for k in (7, 12)})
        # The poison record was dropped, and counted where it landed.
        dropped = {t: m["dropped"] for t, m in app.metrics()["task_states"].items()}
        assert sorted(dropped.values()) == [0, 1]
        (task,) = [t for t, n in dropped.items() if n == 1]
        text = client.get(f"{app.config.application_server}/metrics").text
        assert (
            f'schemakit_streams_task_records_dropped_total{{application_id="{app_id}",'
            f'reason="deserialization_error",task="{task}",thread="{app_id}-StreamThread-0"}} 1.0'
        ) in text.splitlines()
    lg.close()


def _read_answer(f: Any) -> tuple[int, dict[str, str], bytes]:
    status = int(f.readline().split()[1])
    headers = {}
    while (line := f.readline().decode().strip()) != "":
        name, _, value = line.partition(":")
        headers[name.lower()] = value.strip()
    return status, headers, f.read(int(headers["content-length"]))


def _raw_connections(server: str, bodies: dict[int, bytes]) -> None:
    """Key lookups on plain sockets, as the query server answers them without uvicorn: pipelined requests in
    order, a request arriving in pieces, an error; then a request that is not a lookup on the same connection
    (uvicorn takes the connection over, lookups still answered); ``Connection: close`` honoured."""
    host, port = server.removeprefix("http://").split(":")
    path = "/v1/stores/totals/keys"
    with socket.create_connection((host, int(port)), timeout=10) as sock, sock.makefile("rb") as f:
        sock.sendall(f"GET {path}/7 HTTP/1.1\r\nHost: x\r\n\r\nGET {path}/12 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert [_read_answer(f)[::2] for _ in range(2)] == [(200, bodies[7]), (200, bodies[12])]
        sock.sendall(f"GET {path}/1".encode())
        time.sleep(0.05)
        sock.sendall(b"2 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _read_answer(f)[::2] == (200, bodies[12])
        sock.sendall(f"GET {path}/seven HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        status, headers, body = _read_answer(f)
        assert (status, headers["content-type"], orjson.loads(body)["error_code"]) == (422, "application/json", 42201)
        sock.sendall(b"GET /v1/metadata HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, body = _read_answer(f)
        assert status == 200 and orjson.loads(body)["instance"]
        sock.sendall(f"GET {path}/7 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert _read_answer(f)[::2] == (200, bodies[7])
    with socket.create_connection((host, int(port)), timeout=10) as sock, sock.makefile("rb") as f:
        sock.sendall(f"GET {path}/7 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        assert _read_answer(f)[::2] == (200, bodies[7])
        assert f.read() == b""  # closed


def test_query_server_address_errors(tmp_path: Path, names: Callable[[str], str]) -> None:
    url = f"sqlite:///{tmp_path / 'log'}"
    lg = open_log(url)
    src, out = names("in"), names("out")
    create_topics(lg, 1, src, out)
    with pytest.raises(ValueError, match=r"application_server must be http://host:port, got 'localhost'"):
        StreamsApp(key_counts(src, out), names("app"), url, application_server="localhost")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        app = StreamsApp(
            key_counts(src, out),
            names("app"),
            url,
            state_dir=tmp_path / "s",
            application_server=f"http://127.0.0.1:{port}",
        )
        with pytest.raises(StreamsError, match=rf"the query server could not listen on 127.0.0.1:{port}"):
            app.start()
        app.close()
    lg.close()


def test_typed_values_render_as_json() -> None:
    assert to_json({"key": "a", "value": Total(2, 3.5, frozenset({"y", "x"}))}) == (
        b'{"key":"a","value":{"count":2,"amount":3.5,"tags":["x","y"]}}'
    )
    assert to_json({"value": b"\x00\xff"}) == b'{"value":"AP8="}'


def test_failover_503_standby_then_new_owner(log_url: str, tmp_path: Path, names: Callable[[str], str]) -> None:
    """The other instance is a process, kill -9'd: until its session times out its tasks have an owner that
    does not answer. (On Kafka the log URL's session timeout, 2 s in the tests, wins over session_ms.)"""
    url = log_url
    lg = open_log(url)
    src, out, app_id = names("in"), names("out"), names("failover")
    create_topics(lg, PARTITIONS, src, out)
    _feed(lg, src)
    session_ms = 5000
    other_server = f"http://127.0.0.1:{free_port()}"
    other = Instance(
        "other",
        [
            url,
            app_id,
            str(tmp_path / "other"),
            src,
            out,
            "100",
            "--topology",
            "key_counts",
            "--standbys",
            "1",
            "--session-ms",
            str(session_ms),
            "--server",
            other_server,
        ],
        Path(tempfile.mkdtemp(dir=tmp_path)),
    )
    here = StreamsApp(
        key_counts(src, out, "here"),
        app_id,
        url,
        state_dir=tmp_path / "here",
        commit_interval_ms=100,
        num_standby_replicas=1,
        session_timeout_ms=session_ms,
        application_server=f"http://127.0.0.1:{free_port()}",
    )
    try:
        with here, httpx.Client(timeout=10) as client:
            base = f"{here.config.application_server}/v1/stores/counts"
            wait_for(lambda: len(here.tasks()) == 2 and len(other.tasks()) == 2, what="two tasks each")
            wait_for(
                lambda: len(client.get(f"{base}/all").json().get("items", [])) == len(KEYS), what="all keys counted"
            )
            theirs = [
                k
                for k in KEYS
                if here.query_metadata_for_key("counts", k).partition
                not in {int(t.split("_")[1]) for t in here.tasks()}
            ]
            assert theirs and set(here.standby_tasks()) == set(other.tasks())
            # Caught up means holding every count: the owner's changes reach the changelog (and the standby)
            # only at its commit, so a lag of 0 alone can be read before the last ones are written.
            replica = here.store("counts", include_standby=True)
            wait_for(lambda: all(replica.get(k) == EXPECTED[k] for k in theirs), what="standbys caught up")
            wait_for(
                lambda: all(here.metrics()["task_states"][t].get("lag") == 0 for t in here.standby_tasks()),
                what="standbys at the changelog end",
            )
            other.kill()
            key = theirs[0]
            r = client.get(f"{base}/keys/{key}")
            assert r.status_code == 503, r.text
            assert r.headers["Retry-After"] == str(here.retry_after_s)
            assert here.retry_after_s == (session_ms // 1000 if url.startswith("sqlite") else 2)
            assert r.json()["error_code"] == 50301 and "include_standby=true" in r.json()["message"]
            r = client.get(f"{base}/all")
            assert r.status_code == 503 and r.headers["Retry-After"] == str(here.retry_after_s)
            r = client.get(f"{base}/keys/{key}", params={"include_standby": "true"})
            assert r.status_code == 200, r.text
            assert r.json() == {
                "key": key,
                "value": EXPECTED[key],
                "partition": partition_for_key(key.encode(), PARTITIONS),
                "instance": here.instance_id,
                "stale": True,
            }
            r = client.get(f"{base}/all", params={"include_standby": "true"})
            assert [(i["key"], i["value"]) for i in r.json()["items"]] == sorted(EXPECTED.items())
            assert len(r.json()["stale_partitions"]) == 2
            # The session times out, the standbys become the active tasks here: fresh answers again.
            wait_for(lambda: len(here.tasks()) == PARTITIONS, timeout=30, what="the takeover")
            wait_for(lambda: client.get(f"{base}/keys/{key}").status_code == 200, what="answers after the takeover")
            assert client.get(f"{base}/keys/{key}").json()["stale"] is False
            r = client.get(f"{base}/all")
            assert [(i["key"], i["value"]) for i in r.json()["items"]] == sorted(EXPECTED.items())
    finally:
        other.ensure_dead()
        lg.close()
