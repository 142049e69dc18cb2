"""Out-of-order order enrichment against a versioned price table, end to end on both logs (SQLite and the
Kafka-protocol test broker), 4 partitions: orders keyed by product join the price their product had at the
order's time (``tests/streams/topologies.versioned_enrichment``: a versioned table, a 5 s join grace).

Prices arrive with about 10% of their versions out of order; about 10% of the orders are late (older than
the stream time minus the grace: they join at once, as of their own time). The run has three parts: a first
app that is closed cleanly, a second in a subprocess that is killed with SIGKILL while orders stream in (its
uncommitted versions and buffered orders are lost locally and come back from the changelogs), and a third
that finishes. Late orders of the last part reach back into the first part's prices, which only the restored
history can answer. Every order with a price at its time is written with exactly that price (at least once:
the kill may repeat some, never with another price), and no other result is written.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from streams import VersionedRecord
from streams.app import StreamsApp
from streams.log import Log, Producer
from tests.streams.instances import Instance
from tests.streams.test_joins_end_to_end import Ends, results, send
from tests.streams.topologies import ENRICHMENT_GRACE_MS, price_as_of, versioned_enrichment
from tests.support.ports import free_port
from tests.support.topics import create_topics, send_timestamped
from tests.support.waiting import wait_for

BASE_TS = 1_000_000  # librdkafka sends a timestamp of 0 as "now"
PRODUCTS = [f"p{i}" for i in range(40)]
SECOND = 1_000


def make_prices(rng: random.Random, start: int, end: int) -> list[tuple[str, Any, int]]:
    """Each product's price every ~10 s in [start, end), about 10% of the versions swapped out of order."""
    rows = []
    for product in PRODUCTS:
        for at in range(start + rng.randrange(5 * SECOND), end, 10 * SECOND):
            rows.append((product, {"cents": rng.randrange(100, 10_000)}, at))
    rng.shuffle(rows)
    rows.sort(key=lambda r: r[2])
    for i in range(len(rows) - 1):
        if rng.random() < 0.1:
            rows[i], rows[i + 1] = rows[i + 1], rows[i]
    return rows


def make_orders(rng: random.Random, start: int, end: int, n: int, late_from: int) -> list[tuple[str, Any, int]]:
    """``n`` orders in time order over [start, end), about 10% of them late, from ``late_from`` on."""
    rows = []
    step = (end - start) // n
    for i in range(n):
        at = start + i * step
        if rng.random() < 0.1:
            at = rng.randrange(late_from, max(late_from + 1, at - ENRICHMENT_GRACE_MS))
        rows.append((rng.choice(PRODUCTS), {"id": f"o{start}-{i}", "at": at}, at))
    return rows


def expected(orders: list[tuple[str, Any, int]], prices: list[tuple[str, Any, int]]) -> Counter:
    out: Counter = Counter()
    for product, order, at in orders:
        price = price_as_of(prices, product, at)
        if price is not None:
            out[orjson.dumps((product, {**order, "price": price}))] += 1
    return out


class Sender:
    """``send`` (rows to a topic, their ends noted) through one producer for the whole test: a new Kafka producer
    delivers nothing for its first 0.5-1 s (it fetches an idempotent producer id first), and this test sends about
    twenty batches."""

    def __init__(self, producer: Producer, ends: Ends) -> None:
        self.producer, self.ends = producer, ends

    def __call__(self, topic: str, rows: list[tuple[str, Any, int]], partition: int | None = None) -> None:
        send_timestamped(self.producer, topic, rows, lambda _, md: self.ends.delivered(topic, md), partition)

    def ticks(self, topic: str, at: int) -> None:
        """One order per partition far enough in time that every buffered order's grace has passed (its product
        has no price, so it joins nothing)."""
        for partition in range(4):
            self(topic, [("~tick", {"id": "tick"}, at)], partition)


@pytest.fixture
def kill_log_producer(kill_log: Log) -> Iterator[Producer]:
    with kill_log.producer() as producer:
        yield producer


@pytest.mark.slow
def test_out_of_order_enrichment_across_a_clean_restart_and_a_kill_9(
    kill_log: Log, kill_log_url: str, kill_log_producer: Producer, names: Callable[[str], str], tmp_path: Path
) -> None:
    log, log_url = kill_log, kill_log_url
    orders_t, prices_t, out_t, app_id = names("orders"), names("prices"), names("priced"), names("asof")
    create_topics(log, 4, orders_t, prices_t, out_t)
    rng = random.Random(23)
    t1, t2, t3 = BASE_TS + 120 * SECOND, BASE_TS + 240 * SECOND, BASE_TS + 360 * SECOND
    prices1, prices2, prices3 = make_prices(rng, BASE_TS, t1), make_prices(rng, t1, t2), make_prices(rng, t2, t3)
    # Orders of a part end before that part's last prices, so every order meets the prices of its time.
    orders1 = make_orders(rng, BASE_TS, t1 - 20 * SECOND, 300, BASE_TS)
    orders2 = make_orders(rng, t1, t2 - 20 * SECOND, 600, BASE_TS)
    orders3 = make_orders(rng, t2, t3 - 20 * SECOND, 300, BASE_TS)
    ends = Ends()
    sender = Sender(kill_log_producer, ends)
    state = tmp_path / "state"

    def written() -> Counter:
        return Counter(orjson.dumps(r) for r in results(log, out_t))

    def committed() -> bool:
        return ends.committed(log, app_id)

    # Part one, in process: prices, then orders; a clean close (the last orders stay buffered).
    sender(prices_t, prices1)
    topology = versioned_enrichment(orders_t, prices_t, out_t)
    with StreamsApp(topology, app_id, log_url, state_dir=state, commit_interval_ms=500) as app:
        latest = {p: price_as_of(prices1, p, t1) for p in PRODUCTS}
        wait_for(lambda: dict(app.store("prices").all()) == latest, what="the first prices")
        sender(orders_t, orders1)
        wait_for(committed, timeout=120, what="the first orders to be committed")
    # Part two, in a subprocess killed while orders stream in.
    sender(prices_t, prices2)
    args = [log_url, app_id, str(state), orders_t, out_t, "500", "--topology", "versioned_enrichment"]
    # a 2 s session (the test URL's): the finisher's group waits out the killed member's session, not 10 s of it
    args += ["--table", prices_t, "--session-ms", "2000"]
    killed = Instance("killed", args, tmp_path)
    try:
        wait_for(committed, timeout=120, what="the second prices to be committed")

        def feed() -> None:
            for i in range(0, len(orders2), 50):
                sender(orders_t, orders2[i : i + 50])
                time.sleep(0.1)

        feeder = threading.Thread(target=feed)
        feeder.start()
        time.sleep(0.6)  # the feed takes at least 1.2 s: the kill lands while orders stream in
        killed.kill()  # SIGKILL: no commit, no checkpoint, buffered orders only in the changelog
        feeder.join()
    finally:
        if killed.proc.poll() is None:
            killed.kill()
        killed.stderr.close()
    # Part three: a fresh start on the same state directory finishes everything.
    sender(prices_t, prices3)
    finisher = Instance("finisher", args, tmp_path)
    try:
        wait_for(committed, timeout=120, what="the third prices and the second orders to be committed")
        sender(orders_t, orders3)
        sender.ticks(orders_t, t3 + 10 * ENRICHMENT_GRACE_MS)
        want = expected(orders1 + orders2 + orders3, prices1 + prices2 + prices3)
        wait_for(lambda: set(written()) >= set(want), timeout=120, what="every order priced")
        assert finisher.stop() == 0
    finally:
        if finisher.proc.poll() is None:
            finisher.kill()
    got = written()
    assert set(got) == set(want)  # none lost, none priced wrongly, none made up
    assert all(got[r] >= n for r, n in want.items())  # each order priced at least once (the kill may repeat one)
    late = sum(1 for _, _, at in orders3 if at < t2)
    assert late > 0  # part three reached back into restored history


def test_versions_over_http_and_app_store(log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path) -> None:
    """``app.store(name)`` and ``GET /v1/stores/{store}/keys/{key}?as_of=`` answer a version of a versioned
    table: its value, timestamp and valid_to (null: still the latest)."""
    orders_t, prices_t, out_t, app_id = names("orders"), names("prices"), names("priced"), names("asof-http")
    create_topics(log, 4, orders_t, prices_t, out_t)
    ends = Ends()
    send(log, prices_t, [("p1", {"cents": 100}, BASE_TS), ("p1", {"cents": 120}, BASE_TS + 2 * SECOND)], ends)
    send(log, prices_t, [("p1", {"cents": 110}, BASE_TS + SECOND)], ends)  # out of order: into the history
    server = f"http://127.0.0.1:{free_port()}"
    topology = versioned_enrichment(orders_t, prices_t, out_t)
    # commits every 500 ms: the test waits for the first commit (the default interval is 5 s)
    app = StreamsApp(topology, app_id, log_url, state_dir=tmp_path, application_server=server, commit_interval_ms=500)
    with app:
        wait_for(lambda: ends.committed(log, app_id), what="the prices to be committed")
        view = app.store("prices")
        assert view.get("p1") == VersionedRecord({"cents": 120}, BASE_TS + 2 * SECOND)
        assert view.get("p1", as_of=BASE_TS + 1500) == VersionedRecord({"cents": 110}, BASE_TS + SECOND, BASE_TS + 2000)
        with httpx.Client(timeout=10) as client:
            r = client.get(f"{server}/v1/stores/prices/keys/p1", params={"as_of": str(BASE_TS + 500)})
            assert r.status_code == 200, r.text
            body = r.json()
            assert (body["value"], body["timestamp"], body["valid_to"]) == ({"cents": 100}, BASE_TS, BASE_TS + SECOND)
            r = client.get(f"{server}/v1/stores/prices/keys/p1")
            assert (r.json()["value"], r.json()["valid_to"]) == ({"cents": 120}, None)
            r = client.get(f"{server}/v1/stores/prices/keys/p1", params={"as_of": str(BASE_TS - 1)})
            assert r.status_code == 404 and r.json()["error_code"] == 40402
            r = client.get(f"{server}/v1/stores/prices/keys/p1", params={"as_of": "yesterday"})
            assert r.status_code == 400 and r.json()["error_code"] == 40001
            r = client.get(f"{server}/v1/stores/prices/all")  # every key's latest value
            assert r.status_code == 200, r.text
            assert [(i["key"], i["value"]) for i in r.json()["items"]] == [("p1", {"cents": 120})]
