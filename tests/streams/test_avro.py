"""Typed records through serdes' AvroSerde (registry-framed Avro) end to end: the issue's example with
dataclasses for orders and totals, on each log, plus the test driver."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from serdes import AvroSerde, RegistryClient
from streams import StreamsBuilder, Topology, TopologyTestDriver
from streams.app import StreamsApp
from streams.log import Log
from tests.streams.topologies import make_orders, reference_totals
from tests.support.topics import create_topics, last_values, read_to_end


@dataclasses.dataclass
class Order:
    id: int
    customer: str
    amount: int
    paid: bool


@dataclasses.dataclass
class Total:
    count: int
    amount: int


def billing(registry: RegistryClient, orders_topic: str, out_topic: str) -> Topology:
    b = StreamsBuilder()
    orders = b.stream(orders_topic, key=str, value=AvroSerde(registry, Order))
    (
        orders.filter(lambda k, o: o.paid)
        .group_by(lambda k, o: o.customer, key=str)
        .aggregate(
            initial=lambda: Total(0, 0),
            add=lambda k, o, t: Total(t.count + 1, t.amount + o.amount),
            store="totals",
            value=AvroSerde(registry, Total),
        )
        .to_stream()
        .to(out_topic)
    )
    return b.build()


def expected_totals(orders: list[dict]) -> dict[str, Total]:
    return {c: Total(t["count"], t["amount"]) for c, t in reference_totals(orders).items()}


def test_avro_typed_aggregate_with_test_driver(registry_url: str, names: Callable[[str], str]) -> None:
    registry = RegistryClient(registry_url)
    orders_topic, out = names("orders"), names("totals")
    orders = make_orders(50)
    with TopologyTestDriver(billing(registry, orders_topic, out), application_id=names("ttd")) as d:
        topic = d.input_topic(orders_topic, key=str, value=AvroSerde(registry, Order))
        for o in orders:
            topic.pipe_input(f"o{o['id']}", Order(**o))
        result = d.output_topic(out, key=str, value=AvroSerde(registry, Total)).read_key_values_to_map()
        assert result == expected_totals(orders)
        assert d.get_key_value_store("totals").get("c1") == expected_totals(orders)["c1"]


def test_avro_typed_aggregate_end_to_end(
    registry_url: str, kill_log: Log, kill_log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    log, log_url = kill_log, kill_log_url  # on Kafka a broker of its own: it timed out on a worker's shared one
    registry = RegistryClient(registry_url)
    orders_topic, out, app_id = names("orders"), names("customer-totals"), names("billing")
    create_topics(log, 4, orders_topic, out)
    order_serde = AvroSerde(registry, Order)
    orders = make_orders(600)
    with log.producer() as p:
        for o in orders:
            p.send(orders_topic, order_serde.serialize(Order(**o), orders_topic), f"o{o['id']}".encode())
        p.flush()
    expected = expected_totals(orders)
    app = StreamsApp(billing(registry, orders_topic, out), app_id, log_url, state_dir=tmp_path, commit_interval_ms=200)
    with app:
        assert app.wait_until(
            lambda a: (
                a.store("totals").approximate_num_entries() == len(expected)
                and dict(a.store("totals").all()) == expected
            ),
            60,
        )
        assert app.store("totals").get("c3") == expected["c3"]
    total_serde = AvroSerde(registry, Total)
    assert last_values(read_to_end(log, out), value=lambda v: total_serde.deserialize(v, out)) == expected
    subjects = set(registry.get_subjects())
    assert {f"{app_id}-totals-changelog-value", f"{app_id}-totals-repartition-value", f"{out}-value"} <= subjects
