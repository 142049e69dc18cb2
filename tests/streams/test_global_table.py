"""``GlobalKTable`` and the stream-GlobalKTable join: in the test driver (scenarios), then end to end on
SQLite and on the test broker with 4 partitions: the global table is restored from all partitions of its
topic before any record is processed (every order finds its country), follows updates while the app
runs, and is complete on both instances when a second one takes over half the tasks.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from streams import DeserializationError, GlobalKTable, StreamsApp, StreamsBuilder, TopologyError, TopologyTestDriver
from streams.log import Log, open_log
from tests.streams.scenarios import pipe, read_rows
from tests.support.topics import create_topics, last_values, produce, read_to_end
from tests.support.waiting import wait_for


def region_of(order: dict[str, Any], country: dict[str, Any] | None) -> dict[str, Any]:
    return {**order, "region": None if country is None else country["region"]}


def located(orders: str, countries: str, out: str, *, left: bool = False) -> StreamsBuilder:
    b = StreamsBuilder()
    stream = b.stream(orders, key=str, value="json")
    table = b.global_table(countries, key=str, value="json", store="countries")
    assert isinstance(table, GlobalKTable)
    join = stream.left_join if left else stream.join
    join(table, lambda k, o: o["country"], region_of).to(out, key=str, value="json")
    return b


def order(country: str | None, n: int = 1) -> dict[str, Any]:
    return {"country": country, "n": n}


def test_stream_global_inner_join_follows_the_table() -> None:
    with TopologyTestDriver(located("orders", "countries", "out").build()) as d:
        pipe(d, "countries", [("fr", {"region": "eu"}, 1), ("us", {"region": "na"}, 2)], str, "json")
        pipe(d, "orders", [("o1", order("fr"), 10), ("o2", order("jp"), 11), ("o3", order("us"), 12)], str, "json")
        pipe(d, "countries", [("fr", {"region": "europe"}, 13), ("us", None, 14)], str, "json")
        pipe(d, "orders", [("o4", order("fr", 2), 15), ("o5", order("us"), 16), ("o6", None, 17)], str, "json")
        assert read_rows(d, "out", str, "json") == [
            ("o1", {"country": "fr", "n": 1, "region": "eu"}, 10),  # the stream record's key and timestamp
            ("o3", {"country": "us", "n": 1, "region": "na"}, 12),  # o2: no row for jp, dropped
            ("o4", {"country": "fr", "n": 2, "region": "europe"}, 15),  # the table's update is seen
        ]  # o5: us was deleted; o6: a None value is dropped
        assert d.get_key_value_store("countries").get_with_timestamp("fr") == ({"region": "europe"}, 13)
        assert d.dropped_records == 1


def test_stream_global_left_join_joins_missing_rows_with_none() -> None:
    with TopologyTestDriver(located("orders", "countries", "out", left=True).build()) as d:
        pipe(d, "countries", [("fr", {"region": "eu"}, 1)], str, "json")
        pipe(d, "orders", [("o1", order("fr"), 10), ("o2", order("jp"), 11), ("o3", order(None), 12)], str, "json")
        assert read_rows(d, "out", str, "json") == [
            ("o1", {"country": "fr", "n": 1, "region": "eu"}, 10),
            ("o2", {"country": "jp", "n": 1, "region": None}, 11),
            ("o3", {"country": None, "n": 1, "region": None}, 12),  # a None global key: no lookup
        ]


def test_joiner_with_key_and_describe() -> None:
    b = StreamsBuilder()
    table = b.global_table("countries", key=str, value=str)
    b.stream("orders", key=str, value=str).join(
        table, lambda k, v: v, lambda k, v, row: f"{k}:{v}:{row}", with_key=True
    ).to("out", key=str, value=str)
    topology = b.build()
    text = topology.describe()
    store = "countries-STATE-STORE-0000000000"
    assert (
        "  Sub-topology: 1 for global store (will not generate tasks)\n"
        f"    Source: {store}-source (topics: [countries])\n"
        f"      --> {store}-processor\n"
        f"    Processor: {store}-processor (stores: [{store}])\n"
        "      --> none\n"
        f"      <-- {store}-source\n\n"
    ) in text
    assert "Sub-topology: 2" not in text and "(topics: [orders])" in text
    with TopologyTestDriver(topology) as d:
        assert d.source_topics == ["countries", "orders"]
        pipe(d, "countries", [("fr", "eu", 1)], str, str)
        pipe(d, "orders", [("o1", "fr", 2)], str, str)
        assert read_rows(d, "out", str, str) == [("o1", "o1:fr:eu", 2)]


def test_bad_global_table_use_fails_clearly() -> None:
    b = StreamsBuilder()
    b.global_table("countries", store="countries")
    with pytest.raises(TopologyError, match="'countries' is already read by source 'global table countries'"):
        b.stream("countries")
    with pytest.raises(TopologyError, match="a store named 'countries' already exists"):
        b.global_table("other", store="countries")
    orders = b.stream("orders")
    with pytest.raises(TypeError, match=r"KStream.join\(\) with a key selector needs a GlobalKTable"):
        orders.join(b.table("customers"), lambda k, v: k, lambda v, o: v)
    other = StreamsBuilder().global_table("x")
    with pytest.raises(TopologyError, match="same StreamsBuilder"):
        orders.left_join(other, lambda k, v: k, lambda v, o: v)


def test_a_global_record_that_does_not_deserialize_names_its_offset() -> None:
    with TopologyTestDriver(located("orders", "countries", "out").build()) as d:
        countries = d.input_topic("countries", key=str, value="json")
        countries.pipe_input("fr", {"region": "eu"})
        with pytest.raises(DeserializationError, match=r"the value of the record at countries\[0\] offset 1"):
            countries.pipe_raw(b"de", b"{not json")
        assert d.get_key_value_store("countries").get("fr") == {"region": "eu"}


# -- end to end -------------------------------------------------------------------------------------------

COUNTRIES = {f"c{i:02d}": {"region": f"r{i % 5}"} for i in range(24)}


def produce_one_per_batch(lg: Log, topic: str, items: dict[str, Any]) -> None:
    """One record per produce batch: the test broker's end offsets are right only then (its high watermark
    is the last batch's base offset + 1), and a global table restores up to the end offsets."""
    with lg.producer() as p:
        for k, v in items.items():
            p.send(topic, orjson.dumps(v), k.encode())
            p.flush()


def outputs(lg: Log, topic: str) -> dict[str, Any]:
    return last_values(read_to_end(lg, topic, quiet=0.5))


def test_global_join_end_to_end_restores_first_and_follows_updates(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    orders_t, countries_t, out, app_id = names("orders"), names("countries"), names("located"), names("geo")
    create_topics(log, 4, orders_t, countries_t, out)
    produce_one_per_batch(log, countries_t, COUNTRIES)
    orders = {f"o{i}": order(f"c{i % 24:02d}", i) for i in range(60)}
    produce(log, orders_t, list(orders.items()))
    topology = located(orders_t, countries_t, out).build()
    with StreamsApp(topology, app_id, log_url, state_dir=tmp_path / "s", commit_interval_ms=100) as app:
        # restored before processing: every order (all produced before the start) found its country
        reference = {k: region_of(o, COUNTRIES[o["country"]]) for k, o in orders.items()}
        wait_for(lambda: outputs(log, out) == reference, what="every order joined with its country")
        assert sorted(app.store("countries").all()) == sorted(COUNTRIES.items())
        assert app.store("countries").get("c03") == {"region": "r3"}
        # kept up to date while running
        produce(log, countries_t, [("c03", {"region": "moved"}), ("zz", {"region": "new"})])
        wait_for(lambda: app.store("countries").get("zz") == {"region": "new"}, what="the global table to follow")
        wait_for(lambda: app.store("countries").get("c03") == {"region": "moved"}, what="the update of c03")
        produce(log, orders_t, [("late1", order("c03")), ("late2", order("zz"))])

        # Both awaited: the keys may be in different tasks' partitions, so one's output says nothing of the other's.
        def both_late() -> dict[str, Any]:
            seen = outputs(log, out)
            return seen if {"late1", "late2"} <= seen.keys() else {}

        late = wait_for(both_late, what="both late orders joined")
        assert late["late2"] == region_of(order("zz"), {"region": "new"})
        assert late["late1"] == region_of(order("c03"), {"region": "moved"})
        assert not log.describe_topic(f"{app_id}-countries-changelog")  # the topic is the table's log


def test_second_instance_takes_half_the_tasks_and_holds_the_whole_global_table(
    log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    lg = open_log(log_url)
    orders_t, countries_t, out, app_id = names("orders"), names("countries"), names("located"), names("geo2")
    create_topics(lg, 4, orders_t, countries_t, out)
    produce_one_per_batch(lg, countries_t, COUNTRIES)
    topology = located(orders_t, countries_t, out).build()

    def app(name: str) -> StreamsApp:
        return StreamsApp(
            topology, app_id, log_url, state_dir=tmp_path / name, commit_interval_ms=100, session_timeout_ms=2000
        )

    first = app("a")
    first.start()
    second = app("b")
    try:
        wait_for(lambda: first.tasks() == ["0_0", "0_1", "0_2", "0_3"], what="the first instance to run")
        second.start()
        wait_for(lambda: len(first.tasks()) == 2 and len(second.tasks()) == 2, what="the tasks to split 2 / 2")
        assert sorted(first.tasks() + second.tasks()) == ["0_0", "0_1", "0_2", "0_3"]
        for a in (first, second):  # every instance holds all 4 partitions of the global table
            assert sorted(a.store("countries").all()) == sorted(COUNTRIES.items())
        orders = {f"o{i}": order(f"c{i % 24:02d}", i) for i in range(40)}
        produce(lg, orders_t, list(orders.items()))
        reference = {k: region_of(o, COUNTRIES[o["country"]]) for k, o in orders.items()}
        wait_for(lambda: outputs(lg, out) == reference, what="orders joined on both instances")
    finally:
        second.close()
        first.close()
        lg.close()


def test_an_empty_global_topic_restores_at_once_and_fills_while_running(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    orders_t, countries_t, out, app_id = names("orders"), names("countries"), names("located"), names("geo3")
    create_topics(log, 4, orders_t, countries_t, out)
    topology = located(orders_t, countries_t, out, left=True).build()
    with StreamsApp(topology, app_id, log_url, state_dir=tmp_path / "s", commit_interval_ms=100) as app:
        assert app.store("countries").all() == []
        produce(log, countries_t, [("fr", {"region": "eu"})])
        wait_for(lambda: app.store("countries").get("fr") == {"region": "eu"}, what="the first country")
        produce(log, orders_t, [("o1", order("fr")), ("o2", order("jp"))])
        wait_for(
            lambda: (
                outputs(log, out)
                == {"o1": region_of(order("fr"), {"region": "eu"}), "o2": region_of(order("jp"), None)}
            ),
            what="the left join",
        )
