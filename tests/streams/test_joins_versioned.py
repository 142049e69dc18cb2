"""Versioned tables in the DSL (KIP-914, KIP-923), as Kafka Streams expects them (its tests in apache/kafka's trunk
of October 2024; the behaviour of Kafka 3.6 on): the grace-period cases of
Kafka's ``KStreamKTableJoinTest`` record for record (``shouldDelayJoinByGracePeriod``,
``shouldHandleLateJoinsWithGracePeriod``, and its checks that the table is versioned and keeps its history
at least as long as the grace); a stream-table join against a versioned table looking the row up as of the
stream record's time; out-of-order table updates that go into the history without becoming the table's value
downstream; aggregations materialized as versions; the versioned store read through the test driver."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from streams import (
    Processor,
    ProcessorContext,
    StreamsBuilder,
    Topology,
    TopologyError,
    TopologyTestDriver,
    VersionedRecord,
    VersionedStoreSpec,
)
from tests.streams.scenarios import COLOUR_COUNTS, COLOUR_ROWS, StreamTableJoin, pipe, read_rows

Row = tuple[Any, Any, int]


def tostring(value: Any, row: Any) -> str:
    """Kafka's ``MockValueJoiner.TOSTRING_JOINER``."""
    return f"{value}+{row}"


class GraceScenario(StreamTableJoin):
    """Kafka's ``KStreamKTableJoinTest.makeJoin(grace)``: a versioned table (5 minutes of history) joined with
    a stream with ``grace``."""

    def __init__(self, grace_ms: int) -> None:
        b = StreamsBuilder()
        spec = VersionedStoreSpec("V-grace", history_retention=timedelta(minutes=5))
        table = b.table("tableTopic2", key=int, value=str, store=spec)
        stream = b.stream("streamTopic", key=int, value=str)
        stream.join(table, tostring, grace=grace_ms, name="Grace").to("out", key=int, value=str)
        super().__init__(b.build(), "streamTopic", "tableTopic2")

    def push_table_non_random(self, n: int, prefix: str) -> None:
        for k in range(n):
            self.table.pipe_input(k, f"{prefix}{k}", timestamp=0)

    def start(self) -> None:
        """How Kafka's grace tests start: table rows Y0..Y3 (no output), then stream records X0..X3 at times 0..3,
        of which X0 and X1 are joined at once and X2 and X3 wait out the grace period."""
        self.push_table_non_random(4, "Y")
        assert self.results() == []
        self.push_stream(4, "X")
        assert self.results() == [(0, "X0+Y0", 0), (1, "X1+Y1", 1)]


def test_should_delay_join_by_grace_period() -> None:
    s = GraceScenario(2)
    s.start()
    s.push_table_non_random(4, "YY")
    assert s.results() == []
    s.push_stream(4, "X")
    assert s.results() == [(0, "X0+YY0", 0), (1, "X1+YY1", 1)]
    s.stream.pipe_input(5, "test", timestamp=7)
    assert s.results() == [(2, "X2+YY2", 2), (2, "X2+YY2", 2), (3, "X3+YY3", 3), (3, "X3+YY3", 3)]
    s.push_table_non_random(4, "YYY")
    assert s.results() == []


def test_should_handle_late_joins_with_grace_period() -> None:
    s = GraceScenario(2)
    s.start()
    s.push_stream(1, "X")  # older than stream time minus the grace: joins at once, evicts nothing
    assert s.results() == [(0, "X0+Y0", 0)]


def test_the_buffer_is_a_changelogged_store_of_the_join() -> None:
    s = GraceScenario(2)
    buffer = s.driver.get_state_store("Grace-Buffer")
    s.push_stream(3, "X")
    assert len(buffer) == 2  # X1, X2 wait; X0 left when stream time reached 2
    assert "Grace-Buffer" in s.driver.topology.stores


def _grace_join(table_store: Any, grace: Any, *, derive: bool = False) -> StreamsBuilder:
    b = StreamsBuilder()
    table = b.table("topic2", key=str, value=str, store=table_store)
    if derive:
        table = table.filter(lambda k, v: True)  # the join's store is inherited from the source table
    b.stream("topic", key=str, value=str).join(table, lambda a, c: a + c, grace=grace, name="first-join").to("out")
    return b


def test_grace_needs_a_versioned_table_and_says_how() -> None:
    """Kafka's ``shouldFailIfTableIsNotVersioned`` and ``...ButMaterializationIsInherited``."""
    with pytest.raises(TopologyError, match=r"must be versioned.*VersionedStoreSpec\(name, history_retention"):
        _grace_join(None, 6)
    with pytest.raises(TopologyError, match="must be versioned"):
        _grace_join("tableB", 6, derive=True)


def test_a_table_derived_from_a_versioned_one_is_versioned_too() -> None:
    """Kafka's ``shouldNotFailIfTableIsVersionedButMaterializationIsInherited``."""
    b = _grace_join(VersionedStoreSpec("tableB", history_retention=timedelta(minutes=5)), 6, derive=True)
    b.build()


def test_history_retention_must_cover_the_grace() -> None:
    """Kafka's ``shouldFailIfGracePeriodIsLongerThanHistoryRetention`` (and with an inherited store)."""
    with pytest.raises(TopologyError, match="history retention must be at least grace period"):
        _grace_join(VersionedStoreSpec("tableB", history_retention=timedelta(minutes=5)), timedelta(minutes=6))
    with pytest.raises(TopologyError, match="history retention must be at least grace period"):
        _grace_join(VersionedStoreSpec("V-grace", history_retention=0), 6, derive=True)


def test_grace_is_only_for_stream_table_joins() -> None:
    b = StreamsBuilder()
    a, c = b.stream("a"), b.stream("c")
    with pytest.raises(TypeError, match="grace= only with a versioned KTable"):
        a.join(c, lambda x, y: x, grace=5)


class Enrichment:
    """Orders joined with a versioned price table, without grace."""

    def __init__(self, *, left: bool = False) -> None:
        b = StreamsBuilder()
        prices = b.table("prices", key=str, value=int, store=VersionedStoreSpec("prices", history_retention=1000))
        orders = b.stream("orders", key=str, value=int)
        (orders.left_join if left else orders.join)(prices, lambda qty, price: (qty, price)).to("out", key=str)
        self.driver = TopologyTestDriver(b.build())
        self.prices = self.driver.input_topic("prices", key=str, value=int)
        self.orders = self.driver.input_topic("orders", key=str, value=int)
        self.out = self.driver.output_topic("out", key=str)

    def results(self) -> list[Row]:
        return [(r.key, r.value, r.timestamp) for r in self.out.read_records()]


def test_stream_records_look_a_versioned_table_up_as_of_their_time() -> None:
    s = Enrichment(left=True)
    s.prices.pipe_input("apple", 10, timestamp=100)
    s.prices.pipe_input("apple", 12, timestamp=200)
    s.prices.pipe_input("apple", 11, timestamp=150)  # out of order: into the history
    s.prices.pipe_input("apple", None, timestamp=300)  # delisted
    s.orders.pipe_input("apple", 1, timestamp=250)
    s.orders.pipe_input("apple", 2, timestamp=120)  # an order that arrives late meets the price of its time
    s.orders.pipe_input("apple", 3, timestamp=170)
    s.orders.pipe_input("apple", 4, timestamp=50)  # before the first price
    s.orders.pipe_input("apple", 5, timestamp=300)
    assert s.results() == [
        ("apple", [1, 12], 250),
        ("apple", [2, 10], 120),
        ("apple", [3, 11], 170),
        ("apple", [4, None], 50),
        ("apple", [5, None], 300),
    ]
    store = s.driver.get_versioned_store("prices")
    assert store.get("apple") is None
    assert store.get("apple", as_of=160) == VersionedRecord(11, 150, 200)


def test_an_out_of_order_update_is_not_the_tables_value_downstream() -> None:
    """KIP-914: an update older than the current value goes into the history; a table-table join and a
    re-grouping ignore it (Kafka's ``isLatest``), ``to_stream`` passes it on."""
    b = StreamsBuilder()
    versioned = b.table("left", key=str, value=str, store=VersionedStoreSpec("left-store", history_retention=1000))
    other = b.table("right", key=str, value=str)
    versioned.join(other, lambda a, c: f"{a}+{c}").to_stream().to("joined", key=str, value=str)
    versioned.to_stream().to("changes", key=str, value=str)
    versioned.group_by(lambda k, v: (v, 1)).count(store="per-value").to_stream().to("counts", key=str)
    driver = TopologyTestDriver(b.build())
    left = driver.input_topic("left", key=str, value=str)
    right = driver.input_topic("right", key=str, value=str)
    joined = driver.output_topic("joined", key=str, value=str)
    changes = driver.output_topic("changes", key=str, value=str)
    counts = driver.output_topic("counts", key=str, value=int)
    right.pipe_input("k", "R", timestamp=0)
    left.pipe_input("k", "new", timestamp=2000)
    left.pipe_input("k", "old", timestamp=1000)  # out of order
    left.pipe_input("k", "newer", timestamp=3000)
    assert [(r.key, r.value, r.timestamp) for r in joined.read_records()] == [
        ("k", "new+R", 2000),
        ("k", "newer+R", 3000),
    ]
    assert [(r.value, r.timestamp) for r in changes.read_records()] == [
        ("new", 2000),
        ("old", 1000),
        ("newer", 3000),
    ]
    assert driver.get_key_value_store("per-value").get("old") is None
    assert [(r.key, r.value) for r in counts.read_records()] == [("new", 1), ("new", 0), ("newer", 1)]
    assert driver.dropped_records == 1  # the join counts the out-of-order update it skipped, as Kafka's
    # An update older than the history retention is dropped, counted, and not forwarded.
    left.pipe_input("k", "ancient", timestamp=3000 - 1000 - 1)
    assert changes.read_records() == []
    assert driver.dropped_records == 2


def test_an_aggregation_materialized_as_versions() -> None:
    b = StreamsBuilder()
    counts = VersionedStoreSpec("counts", history_retention=timedelta(seconds=10))
    b.stream("clicks", key=str, value=str).group_by_key().count(store=counts).to_stream().to("out", key=str)
    driver = TopologyTestDriver(b.build())
    clicks = driver.input_topic("clicks", key=str, value=str)
    for ts in (100, 200, 300):
        clicks.pipe_input("page", "x", timestamp=ts)
    clicks.pipe_input("page", "x", timestamp=250)  # late: the count's timestamp stays the largest seen
    out = driver.output_topic("out", key=str, value=int)
    assert [(r.value, r.timestamp) for r in out.read_records()] == [(1, 100), (2, 200), (3, 300), (4, 300)]
    store = driver.get_versioned_store("counts")
    assert store.get("page") == VersionedRecord(4, 300)
    assert store.get("page", as_of=250) == VersionedRecord(2, 200, 300)
    assert store.get("page", as_of=99) is None


def test_a_foreign_key_join_with_a_versioned_table_uses_its_latest_values() -> None:
    """KIP-914: a foreign-key join reads the versioned side's current value, and an out-of-order update of it
    changes no result (Kafka's ``ForeignTableJoinProcessor`` skips it)."""
    b = StreamsBuilder()
    prices = b.table("prices", key=str, value=int, store=VersionedStoreSpec("prices", history_retention=10_000))
    orders = b.table("orders", key=str, value="json")
    orders.join(prices, lambda o, p: {**o, "price": p}, foreign_key=lambda o: o["product"]).to_stream().to(
        "out", key=str
    )
    driver = TopologyTestDriver(b.build())
    price_in = driver.input_topic("prices", key=str, value=int)
    order_in = driver.input_topic("orders", key=str, value="json")
    out = driver.output_topic("out", key=str)
    price_in.pipe_input("apple", 10, timestamp=1000)
    order_in.pipe_input("o1", {"product": "apple"}, timestamp=1100)
    price_in.pipe_input("apple", 12, timestamp=2000)
    price_in.pipe_input("apple", 11, timestamp=1500)  # out of order: no new result
    order_in.pipe_input("o2", {"product": "apple"}, timestamp=2100)
    assert [(r.key, r.value) for r in out.read_records()] == [
        ("o1", {"product": "apple", "price": 10}),
        ("o1", {"product": "apple", "price": 12}),
        ("o2", {"product": "apple", "price": 12}),
    ]
    assert driver.dropped_records == 1  # the skipped out-of-order update, counted as Kafka counts it


def test_a_buffered_record_joins_with_its_own_headers() -> None:
    s = GraceScenario(2)
    s.push_table_non_random(2, "Y")
    s.stream.pipe_input(0, "X0", timestamp=0, headers=[("trace", b"zero")])
    s.stream.pipe_input(1, "X1", timestamp=5, headers=[("trace", b"five")])  # the first leaves the buffer now
    (joined,) = s.out.read_records()
    assert (joined.key, joined.value, joined.timestamp) == (0, "X0+Y0", 0)
    assert list(joined.headers) == [("trace", b"zero")]


class PriceHistory(Processor):
    """Keeps every price in a versioned store; forwards the price each record replaced as of its time."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.prices = context.get_state_store("history")

    def process(self, key: Any, value: Any) -> None:
        before = self.prices.get(key, as_of=self.context.timestamp)
        self.prices.put(key, value, self.context.timestamp)
        self.context.forward(key, None if before is None else before.value)


def test_a_versioned_store_through_the_processor_api() -> None:
    t = Topology()
    t.add_source("src", "prices", key=str, value=int)
    t.add_processor("history", PriceHistory, "src")
    t.add_state_store(VersionedStoreSpec("history", history_retention=1000, key=str, value=int), "history")
    t.add_sink("sink", "out", "history", key=str, value=int)
    driver = TopologyTestDriver(t)
    prices = driver.input_topic("prices", key=str, value=int)
    for value, ts in ((10, 100), (12, 300), (11, 200)):
        prices.pipe_input("apple", value, timestamp=ts)
    assert [r.value for r in driver.output_topic("out", key=str, value=int).read_records()] == [None, 10, 10]
    assert driver.get_versioned_store("history").get_versions("apple") == [
        VersionedRecord(12, 300),
        VersionedRecord(11, 200, 300),
        VersionedRecord(10, 100, 200),
    ]


def test_an_aggregate_older_than_the_history_retention_is_neither_stored_nor_forwarded() -> None:
    """Kafka's ``KStreamAggregate``: a result the versioned store does not take (``PUT_RETURN_CODE_NOT_PUT``)
    does not go downstream."""
    b = StreamsBuilder()
    counts = VersionedStoreSpec("counts", history_retention=100)
    b.stream("clicks", key=str, value=str).group_by_key().count(store=counts).to_stream().to("out", key=str)
    driver = TopologyTestDriver(b.build())
    clicks = driver.input_topic("clicks", key=str, value=str)
    clicks.pipe_input("page", "x", timestamp=1000)
    clicks.pipe_input("other", "x", timestamp=2000)
    clicks.pipe_input("page", "x", timestamp=500)  # its count would be a version at 1000, older than 2000 - 100
    out = driver.output_topic("out", key=str, value=int)
    assert [(r.key, r.value, r.timestamp) for r in out.read_records()] == [("page", 1, 1000), ("other", 1, 2000)]
    assert driver.get_versioned_store("counts").get("page") == VersionedRecord(1, 1000)
    assert driver.dropped_records == 1


def test_suppress_is_refused_on_a_versioned_table() -> None:
    from streams import Suppressed

    b = StreamsBuilder()
    table = b.table("t", store=VersionedStoreSpec("t-store", history_retention=1000))
    with pytest.raises(TopologyError, match="only supported for non-versioned KTables"):
        table.suppress(Suppressed.until_time_limit(10))


def _grouped_table_run(aggregate: Any, rows: list[tuple[str, str | None, int]], value: Any) -> list[Row]:
    b = StreamsBuilder()
    table = b.table("topic1", key=str, value=str, store=VersionedStoreSpec("versioned", history_retention=300_000))
    aggregate(table).to_stream().to("out", key=str, value=value)
    with TopologyTestDriver(b.build()) as driver:
        pipe(driver, "topic1", rows)
        return read_rows(driver, "out", str, value)


def test_count_of_a_versioned_table() -> None:
    """Kafka's ``KTableAggregateTest.testCountOfVersionedStore``: ``testCount``'s rows with one out-of-order update
    more, which the versioned table ignores: ``testCount``'s counts."""
    rows = [*COLOUR_ROWS[:3], ("A", "blue", 11), *COLOUR_ROWS[3:]]
    got = _grouped_table_run(lambda t: t.group_by(lambda k, v: (v, v), key=str, value=str).count(), rows, int)
    assert got == COLOUR_COUNTS


def test_aggregate_of_a_versioned_table() -> None:
    """Kafka's ``KTableAggregateTest.testAggOfVersionedStore``."""

    def select(key: str, value: str) -> tuple[Any, Any] | None:
        return {"null": (None, value), "NULL": None}.get(key, (value, value))

    def aggregate(table: Any) -> Any:
        return table.group_by(select, key=str, value=str).aggregate(
            lambda: "0", lambda k, v, agg: f"{agg}+{v}", lambda k, v, agg: f"{agg}-{v}", value=str
        )

    rows: list[tuple[str, str | None, int]] = [("A", "1", 10), ("A", None, 15), ("A", "1", 12), ("B", "2", 20)]
    rows += [("null", "3", 25), ("B", "4", 23), ("NULL", "5", 24), ("B", "7", 22)]
    assert _grouped_table_run(aggregate, rows, str) == [
        ("1", "0+1", 10),
        ("1", "0+1-1", 15),
        ("2", "0+2", 20),
        ("2", "0+2-2", 23),
        ("4", "0+4", 23),
    ]


@pytest.mark.parametrize("versioned", [False, True])
def test_a_filter_skips_invisible_updates_unless_its_table_is_versioned(versioned: bool) -> None:
    """Kafka's ``KTableFilterTest.shouldNotSkipNullIfVersionedUpstream`` (and the unversioned case,
    ``shouldSkipNullToRepartitionWithoutMaterialization``): with old values asked for downstream (a re-grouping),
    a row rejected before and after is skipped, except when the filtered table is versioned."""
    b = StreamsBuilder()
    store = VersionedStoreSpec("versioned", history_retention=300_000) if versioned else "plain"
    table1 = b.table("topic1", key=str, value=str, store=store)
    table2 = table1.filter(lambda k, v: v.lower() == "accept")
    table2.group_by(lambda k, v: (k, v), key=str, value=str).reduce(lambda a, v: a + v, lambda a, v: a)
    table2.to_stream().to("out", key=str, value=str)
    driver = TopologyTestDriver(b.build())
    topic = driver.input_topic("topic1", key=str, value=str)
    for key, ts in (("A", 5), ("B", 10), ("C", 20)):
        topic.pipe_input(key, "reject", timestamp=ts)
    got = [(r.key, r.value, r.timestamp) for r in driver.output_topic("out", key=str, value=str).read_records()]
    assert got == ([("A", None, 5), ("B", None, 10), ("C", None, 20)] if versioned else [])
