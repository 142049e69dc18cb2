"""Window and session stores over HTTP with two instances, each with its own query server: every key's
windows (``/keys/{key}/windows``) and sessions (``/keys/{key}/sessions``) answered from either instance
(routed to the key's owner), narrowed by ``from``/``to`` in milliseconds or ISO-8601; and the errors for a
store of the wrong kind or a bad time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path

import httpx
import orjson
import pytest

from streams import SessionWindows, StreamsApp, StreamsBuilder, TimeWindows
from streams.log import open_log
from streams.query_server import QueryError, parse_time
from streams.topology import Topology
from tests.support.ports import free_port
from tests.support.waiting import wait_for

PARTITIONS = 4
MINUTE = 60_000
BASE = 28_333_333 * MINUTE  # 2023-11-14T22:13:00Z, on a minute boundary
KEYS = [f"k{i:02d}" for i in range(12)]


def minutes_of(i: int) -> list[int]:
    """When key ``i``'s records happen (minutes after BASE): i % 3 + 1 at minute 0, one at minute 1, and for
    odd keys one more at minute 20 (a window and a session of its own)."""
    return [0] * (i % 3 + 1) + [1] + ([20] if i % 2 else [])


def windows_of(i: int) -> list[dict[str, int]]:
    counts: dict[int, int] = {}
    for m in minutes_of(i):
        counts[m] = counts.get(m, 0) + 1
    return [{"start": BASE + m * MINUTE, "end": BASE + (m + 1) * MINUTE, "value": n} for m, n in sorted(counts.items())]


def sessions_of(i: int) -> list[dict[str, int]]:
    first = {"start": BASE, "end": BASE + MINUTE, "value": i % 3 + 2}  # minutes 0 and 1: within the 5-minute gap
    return [first] + ([{"start": BASE + 20 * MINUTE, "end": BASE + 20 * MINUTE, "value": 1}] if i % 2 else [])


def topology(src: str) -> Topology:
    b = StreamsBuilder()
    grouped = b.stream(src, key=str, value="json").group_by_key()
    hour = timedelta(hours=1)  # grace: records arrive in partition order, not time order across partitions
    grouped.windowed_by(TimeWindows.of_size_and_grace(timedelta(minutes=1), hour)).count(store="per-minute")
    grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(timedelta(minutes=5), hour)).count(store="visits")
    grouped.count(store="totals")
    return b.build()


@pytest.fixture
def two_instances(log_url: str, tmp_path: Path, names: Callable[[str], str]) -> Iterator[tuple[StreamsApp, StreamsApp]]:
    lg = open_log(log_url)
    src, app_id = names("visits-in"), names("window-queries")
    lg.create_topic(src, PARTITIONS)
    with lg.producer() as p:
        for i, key in enumerate(KEYS):
            for m in minutes_of(i):
                p.send(src, orjson.dumps({"m": m}), key.encode(), timestamp=BASE + m * MINUTE)
        p.flush()

    def app(name: str) -> StreamsApp:
        return StreamsApp(
            topology(src),
            app_id,
            log_url,
            state_dir=tmp_path / name,
            commit_interval_ms=100,
            num_standby_replicas=1,
            application_server=f"http://127.0.0.1:{free_port()}",
        )

    total = sum(len(minutes_of(i)) for i in range(len(KEYS)))
    with ExitStack() as stack:
        first = stack.enter_context(app("first"))
        second = stack.enter_context(app("second"))
        wait_for(lambda: len(first.tasks()) == len(second.tasks()) == PARTITIONS // 2, what="two tasks each")
        wait_for(
            lambda: sum(v for a in (first, second) for _, v in a.store("per-minute").all()) == total,
            what="every record counted",
        )
        yield first, second
    lg.close()


def test_windows_and_sessions_of_every_key_from_either_instance(two_instances: tuple[StreamsApp, StreamsApp]) -> None:
    first, second = two_instances
    routed = 0
    with httpx.Client(timeout=10) as client:
        for app in (first, second):
            base = f"{app.config.application_server}/v1/stores"
            for i, key in enumerate(KEYS):
                owner = app.query_metadata_for_key("per-minute", key)
                assert owner.active is not None
                where = {"partition": owner.partition, "instance": owner.active.instance, "stale": False}
                r = client.get(f"{base}/per-minute/keys/{key}/windows")
                assert r.status_code == 200, r.text
                assert r.json() == {"key": key, "windows": windows_of(i), **where}
                r = client.get(f"{base}/visits/keys/{key}/sessions")
                assert r.status_code == 200, r.text
                assert r.json() == {"key": key, "sessions": sessions_of(i), **where}
                routed += owner.active.instance != app.instance_id
        assert routed == len(KEYS)  # each key asked once of the instance that does not own it

        base = f"{first.config.application_server}/v1/stores"
        # Windows starting in [from, to]: ISO-8601 and milliseconds alike.
        r = client.get(
            f"{base}/per-minute/keys/k01/windows",
            params={"from": "2023-11-14T22:14:00Z", "to": str(BASE + 30 * MINUTE)},
        )
        assert (
            r.json()["windows"]
            == windows_of(1)[1:]
            == [
                {"start": BASE + MINUTE, "end": BASE + 2 * MINUTE, "value": 1},
                {"start": BASE + 20 * MINUTE, "end": BASE + 21 * MINUTE, "value": 1},
            ]
        )
        r = client.get(f"{base}/per-minute/keys/k01/windows", params={"to": "2023-11-14T23:13:00+01:00"})
        assert r.json()["windows"] == windows_of(1)[:1]  # the same instant as 22:13Z: the window at BASE only
        # Sessions ending at or after ``from`` and starting at or before ``to`` (findSessions).
        r = client.get(f"{base}/visits/keys/k03/sessions", params={"from": str(BASE + 2 * MINUTE)})
        assert r.json()["sessions"] == sessions_of(3)[1:]
        r = client.get(f"{base}/visits/keys/k03/sessions", params={"from": str(BASE + MINUTE), "to": str(BASE)})
        assert r.json()["sessions"] == sessions_of(3)[:1]
        # A key with no windows has none (not an error), like Kafka Streams' empty fetch.
        r = client.get(f"{base}/per-minute/keys/nobody/windows")
        assert r.status_code == 200 and r.json()["windows"] == []

        def error(path: str, **params: str) -> tuple[int, int, str]:
            r = client.get(f"{base}/{path}", params=params)
            return r.status_code, r.json()["error_code"], r.json()["message"]

        assert error("visits/keys/k01/windows") == (404, 40401, "store 'visits' is a session store, not a window store")
        assert error("per-minute/keys/k01/sessions") == (
            404,
            40401,
            "store 'per-minute' is a window store, not a session store",
        )
        assert error("totals/keys/k01/windows") == (
            404,
            40401,
            "store 'totals' is a key-value store, not a window store",
        )
        assert error("per-minute/keys/k01") == (
            404,
            40401,
            "store 'per-minute' is a window store: ask /v1/stores/per-minute/keys/{key}/windows",
        )
        assert error("nothing/keys/k01/windows")[:2] == (404, 40401)
        assert error("per-minute/keys/k01/windows", **{"from": "yesterday"}) == (
            400,
            40001,
            "from='yesterday' is neither epoch milliseconds nor an ISO-8601 time (e.g. 2024-05-01T12:00:00Z)",
        )
        assert error("per-minute/keys/k01/windows", **{"from": "20", "to": "10"}) == (
            400,
            40001,
            "from (20) is after to (10)",
        )
        assert error("visits/keys/k01/sessions", to="-5") == (
            400,
            40001,
            "to='-5' is out of range: times are from the epoch (0) on",
        )


def test_time_parameters() -> None:
    assert parse_time("1700000000000", "from") == 1_700_000_000_000
    assert parse_time("2023-11-14T22:13:20Z", "from") == 1_700_000_000_000
    assert parse_time("2023-11-14T22:13:20.5", "from") == 1_700_000_000_500  # no offset: UTC
    assert parse_time("2023-11-14T23:13:20+01:00", "from") == 1_700_000_000_000
    with pytest.raises(QueryError) as bad:
        parse_time("soon", "to")
    assert (bad.value.status, bad.value.code) == (400, 40001)
