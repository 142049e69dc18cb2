"""Every DSL operation, run through the TopologyTestDriver (no log involved)."""

from __future__ import annotations

import pytest

from streams import (
    INT,
    DeserializationError,
    ProcessingError,
    SerdeError,
    StoreSpec,
    StreamsBuilder,
    TopologyError,
    TopologyTestDriver,
)
from streams.record_serdes import TimestampedSerde


def driver_for(build) -> TopologyTestDriver:  # type: ignore[no-untyped-def]
    b = StreamsBuilder()
    build(b)
    return TopologyTestDriver(b.build())


def test_filter_and_filter_not() -> None:
    def build(b: StreamsBuilder) -> None:
        s = b.stream("in", key=str, value=int)
        s.filter(lambda k, v: v % 2 == 0).to("even")
        s.filter_not(lambda k, v: v % 2 == 0).to("odd")

    with driver_for(build) as d:
        d.input_topic("in", key=str, value=int).pipe_key_values([("a", 1), ("b", 2), ("c", 3), ("d", 4)])
        assert d.output_topic("even", key=str, value=int).read_key_values() == [("b", 2), ("d", 4)]
        assert d.output_topic("odd", key=str, value=int).read_key_values() == [("a", 1), ("c", 3)]


def test_map_changes_key_and_value_with_new_serdes() -> None:
    def build(b: StreamsBuilder) -> None:
        b.stream("in", key=str, value=str).map(lambda k, v: (len(v), k.upper())).to("out", key=int, value=str)

    with driver_for(build) as d:
        d.input_topic("in", key=str, value=str).pipe_input("ab", "xyz")
        out = d.output_topic("out", key=int, value=str)
        assert out.read_key_value() == (3, "AB")
        assert out.is_empty()


def test_map_returning_a_non_pair_is_a_processing_error_naming_the_record() -> None:
    def build(b: StreamsBuilder) -> None:
        b.stream("in", key=str, value=str).map(lambda k, v: v).to("out")

    with driver_for(build) as d, pytest.raises(ProcessingError, match=r"in\[0\] offset 0.*\(key, value\) tuple"):
        d.input_topic("in", key=str, value=str).pipe_input("k", "v")


def test_map_values_keeps_key() -> None:
    def build(b: StreamsBuilder) -> None:
        b.stream("in", key=str, value=str).map_values(len).to("out", value=int)

    with driver_for(build) as d:
        d.input_topic("in", key=str, value=str).pipe_input("k", "hello")
        assert d.output_topic("out", key=str, value=int).read_key_value() == ("k", 5)


def test_flat_map_and_flat_map_values() -> None:
    def build(b: StreamsBuilder) -> None:
        s = b.stream("in", key=str, value=str)
        s.flat_map(lambda k, v: [(w, k) for w in v.split()]).to("pairs", key=str, value=str)
        s.flat_map_values(str.split).to("words", value=str)

    with driver_for(build) as d:
        d.input_topic("in", key=str, value=str).pipe_input("line1", "a b")
        assert d.output_topic("pairs", key=str, value=str).read_key_values() == [("a", "line1"), ("b", "line1")]
        assert d.output_topic("words", key=str, value=str).read_key_values() == [("line1", "a"), ("line1", "b")]


def test_peek_sees_every_record_and_passes_it_on_and_foreach_ends_the_stream() -> None:
    seen = []
    each = []

    def build(b: StreamsBuilder) -> None:
        s = b.stream("in", key=str, value=int)
        s.peek(lambda k, v: seen.append((k, v))).to("out")
        s.foreach(lambda k, v: each.append(v))

    with driver_for(build) as d:
        d.input_topic("in", key=str, value=int).pipe_key_values([("a", 1), ("b", 2)])
        assert seen == [("a", 1), ("b", 2)]
        assert each == [1, 2]
        assert d.output_topic("out", key=str, value=int).read_key_values() == [("a", 1), ("b", 2)]


def test_branch_sends_each_record_to_the_first_matching_branch_only() -> None:
    def build(b: StreamsBuilder) -> None:
        small, medium, _ = b.stream("in", key=str, value=int).branch(
            lambda k, v: v < 10, lambda k, v: v < 100, lambda k, v: False
        )
        small.to("small")
        medium.to("medium")

    with driver_for(build) as d:
        d.input_topic("in", key=str, value=int).pipe_key_values([("a", 5), ("b", 50), ("c", 500), ("d", 7)])
        assert d.output_topic("small", key=str, value=int).read_values() == [5, 7]
        assert d.output_topic("medium", key=str, value=int).read_values() == [50]


def test_merge_interleaves_both_streams() -> None:
    def build(b: StreamsBuilder) -> None:
        left = b.stream("left", key=str, value=str)
        right = b.stream("right", key=str, value=str)
        left.merge(right).map_values(str.upper).to("out", value=str)

    with driver_for(build) as d:
        d.input_topic("left", key=str, value=str).pipe_input("1", "a")
        d.input_topic("right", key=str, value=str).pipe_input("2", "b")
        d.input_topic("left", key=str, value=str).pipe_input("3", "c")
        assert d.output_topic("out", key=str, value=str).read_key_values() == [("1", "A"), ("2", "B"), ("3", "C")]


def test_select_key_then_group_by_key_repartitions_and_counts() -> None:
    b = StreamsBuilder()
    (
        b.stream("in", key=str, value=str)
        .select_key(lambda k, v: v[0])
        .group_by_key(key=str, value=str)
        .count(store="by-initial")
        .to_stream()
        .to("out", key=str, value=int)
    )
    topology = b.build()
    assert "by-initial-repartition" in topology.describe()
    with TopologyTestDriver(topology) as d:
        d.input_topic("in", key=str, value=str).pipe_values(["apple", "avocado", "banana"])
        assert d.output_topic("out", key=str, value=int).read_key_values() == [("a", 1), ("a", 2), ("b", 1)]
        assert d.get_key_value_store("by-initial").get("a") == 2


def test_group_by_key_without_key_change_does_not_repartition() -> None:
    b = StreamsBuilder()
    b.stream("in", key=str, value=str).group_by_key().count(store="c")
    topology = b.build()
    assert "repartition" not in topology.describe()
    assert len(topology.sub_topologies()) == 1


def test_word_count_with_group_by() -> None:
    b = StreamsBuilder()
    (
        b.stream("text", key=str, value=str)
        .flat_map_values(lambda line: line.lower().split())
        .group_by(lambda k, word: word, key=str)
        .count(store="counts")
        .to_stream()
        .to("counts-out", key=str, value=int)
    )
    with TopologyTestDriver(b.build()) as d:
        text = d.input_topic("text", key=str, value=str)
        text.pipe_input("l1", "the cat")
        text.pipe_input("l2", "The dog")
        out = d.output_topic("counts-out", key=str, value=int)
        assert out.read_key_values() == [("the", 1), ("cat", 1), ("the", 2), ("dog", 1)]
        store = d.get_key_value_store("counts")
        assert dict(store.all()) == {"cat": 1, "dog": 1, "the": 2}


def test_reduce_keeps_a_running_value_per_key() -> None:
    def build(b: StreamsBuilder) -> None:
        b.stream("in", key=str, value=int).group_by_key().reduce(max, store="max").to_stream().to("out", value=int)

    with driver_for(build) as d:
        d.input_topic("in", key=str, value=int).pipe_key_values([("a", 3), ("a", 1), ("b", 2), ("a", 9)])
        assert d.output_topic("out", key=str, value=int).read_key_values() == [("a", 3), ("a", 3), ("b", 2), ("a", 9)]
        assert d.get_key_value_store("max").get("a") == 9


def test_aggregations_drop_records_with_null_key_or_value() -> None:
    def build(b: StreamsBuilder) -> None:
        b.stream("in", key=str, value=str).group_by_key().count(store="c").to_stream().to("out", value=int)

    with driver_for(build) as d:
        d.input_topic("in", key=str, value=str).pipe_key_values([("a", None), (None, "x"), ("a", "y")])
        assert d.output_topic("out", key=str, value=int).read_key_values() == [("a", 1)]


def test_aggregate_with_json_values() -> None:
    def build(b: StreamsBuilder) -> None:
        (
            b.stream("orders", key=str, value="json")
            .filter(lambda k, o: o["paid"])
            .group_by(lambda k, o: o["customer"], key=str)
            .aggregate(
                lambda: {"count": 0, "amount": 0.0},
                lambda k, o, t: {"count": t["count"] + 1, "amount": t["amount"] + o["amount"]},
                store="totals",
                value="json",
            )
            .to_stream()
            .to("customer-totals")
        )

    with driver_for(build) as d:
        orders = d.input_topic("orders", key=str, value="json")
        orders.pipe_input("o1", {"customer": "alice", "amount": 2.5, "paid": True})
        orders.pipe_input("o2", {"customer": "bob", "amount": 1.0, "paid": False})
        orders.pipe_input("o3", {"customer": "alice", "amount": 4.0, "paid": True})
        out = d.output_topic("customer-totals", key=str, value="json")
        assert out.read_key_values() == [("alice", {"count": 1, "amount": 2.5}), ("alice", {"count": 2, "amount": 6.5})]
        assert d.get_key_value_store("totals").get("alice") == {"count": 2, "amount": 6.5}
        assert d.get_key_value_store("totals").get("bob") is None


def test_count_emits_once_per_key_per_commit_when_cached() -> None:
    """Two updates of one key within one commit (one piped record fans out to two) emit once."""

    def build(b: StreamsBuilder) -> None:
        (
            b.stream("in", key=str, value=str)
            .flat_map(lambda k, v: [(w, w) for w in v.split()])
            .group_by_key(key=str, value=str)
            .count(store="c")
            .to_stream()
            .to("out", value=int)
        )

    with driver_for(build) as d:
        d.input_topic("in", key=str, value=str).pipe_input("x", "a a a b")
        assert d.output_topic("out", key=str, value=int).read_key_values() == [("a", 3), ("b", 1)]
        assert len(d.changelog("c")) == 2


def test_count_without_cache_emits_every_update() -> None:
    def build(b: StreamsBuilder) -> None:
        (
            b.stream("in", key=str, value=str)
            .flat_map(lambda k, v: [(w, w) for w in v.split()])
            .group_by_key(key=str, value=str)
            .count(store="c", cache=False)
            .to_stream()
            .to("out", value=int)
        )

    with driver_for(build) as d:
        d.input_topic("in", key=str, value=str).pipe_input("x", "a a b")
        assert d.output_topic("out", key=str, value=int).read_key_values() == [("a", 1), ("a", 2), ("b", 1)]
        assert len(d.changelog("c")) == 2  # the changelog still gets the merged value per key


def test_changelog_records_carry_the_serialized_latest_value() -> None:
    def build(b: StreamsBuilder) -> None:
        b.stream("in", key=str, value=str).group_by_key().count(store="c")

    with driver_for(build) as d:
        d.input_topic("in", key=str, value=str).pipe_input("k", "1", timestamp=5)
        d.input_topic("in", key=str, value=str).pipe_input("k", "2", timestamp=3)
        log = d.changelog("c")
        # The DSL's stores are timestamped: 8-byte big-endian timestamp (the aggregate's: the largest of its
        # records'), then the value.
        stored = TimestampedSerde(INT)
        assert [(r.key, stored.deserialize(r.value, "", False)) for r in log] == [(b"k", (1, 5)), (b"k", (2, 5))]
        assert log[1].value == (5).to_bytes(8, "big") + (2).to_bytes(8, "big")
        assert log[0].topic == "test-driver-c-changelog"


def test_table_keeps_latest_value_and_deletes_on_tombstone() -> None:
    def build(b: StreamsBuilder) -> None:
        t = b.table("users", key=str, value="json", store="users")
        t.filter(lambda k, u: u["active"]).map_values(lambda u: u["name"]).to_stream().to("active", value=str)

    with driver_for(build) as d:
        users = d.input_topic("users", key=str, value="json")
        users.pipe_input("1", {"name": "ann", "active": True})
        users.pipe_input("2", {"name": "bo", "active": False})
        users.pipe_input("1", None)
        out = d.output_topic("active", key=str, value=str)
        assert out.read_key_values() == [("1", "ann"), ("2", None), ("1", None)]
        store = d.get_key_value_store("users")
        assert store.get("1") is None
        assert store.get("2") == {"name": "bo", "active": False}


def test_through_writes_and_rereads_a_user_topic() -> None:
    def build(b: StreamsBuilder) -> None:
        b.stream("in", key=str, value=str).map_values(str.upper).through("mid", value=str).to("out")

    b = StreamsBuilder()
    build(b)
    topology = b.build()
    assert len(topology.sub_topologies()) == 2
    with TopologyTestDriver(topology) as d:
        d.input_topic("in", key=str, value=str).pipe_input("k", "v")
        assert d.output_topic("out", key=str, value=str).read_key_values() == [("k", "V")]


def test_repartition_with_a_name_makes_a_named_internal_topic() -> None:
    b = StreamsBuilder()
    b.stream("in", key=str, value=str).select_key(lambda k, v: v).repartition(name="by-value", key=str).to("out")
    topology = b.build()
    assert "(topics: [by-value-repartition])" in topology.describe()
    with TopologyTestDriver(topology, application_id="app") as d:
        d.input_topic("in", key=str, value=str).pipe_input("k", "v")
        assert d.output_topic("out", key=str, value=str).read_key_values() == [("v", "v")]


def test_describe_lists_sub_topologies_sources_sinks_and_stores() -> None:
    b = StreamsBuilder()
    (
        b.stream("orders", key=str, value="json")
        .group_by(lambda k, o: o["c"], name="by-customer")
        .count(store="counts")
        .to_stream()
        .to("out")
    )
    text = b.build().describe()
    assert text.splitlines()[:2] == ["Topologies:", "   Sub-topology: 0"]
    assert "Source: KSTREAM-SOURCE-0000000000 (topics: [orders])" in text
    assert "Sink: KSTREAM-SINK-0000000002 (topic: by-customer-repartition)" in text
    assert "\n\n  Sub-topology: 1\n" in text  # as Kafka: an empty line, and two spaces after the first
    assert "Source: KSTREAM-SOURCE-0000000003 (topics: [by-customer-repartition])" in text
    assert "Processor: KSTREAM-AGGREGATE-0000000004 (stores: [counts])" in text
    assert "Sink: KSTREAM-SINK-0000000006 (topic: out)" in text
    assert "Stores:" not in text  # Kafka's format lists stores only per processor


def test_two_group_bys_need_distinct_names() -> None:
    b = StreamsBuilder()
    s = b.stream("in", key=str, value=str)
    s.group_by(lambda k, v: v, name="g").count()
    with pytest.raises(TopologyError, match="repartition topic 'g' already exists"):
        s.group_by(lambda k, v: k, name="g").count()


def test_a_topic_can_only_be_read_by_one_source() -> None:
    b = StreamsBuilder()
    b.stream("in")
    with pytest.raises(TopologyError, match="topic 'in' is already read by source"):
        b.stream("in")


def test_bad_serde_is_rejected_at_build_time() -> None:
    b = StreamsBuilder()
    with pytest.raises(TypeError, match="is not a serde"):
        b.stream("in", value=object())


def test_sink_serialization_error_names_sink_topic_and_hint() -> None:
    def build(b: StreamsBuilder) -> None:
        b.stream("in", key=str, value=str).map_values(len).to("out", value=str)

    with driver_for(build) as d, pytest.raises(SerdeError, match=r"topic 'out'.*cannot serialize value 1"):
        d.input_topic("in", key=str, value=str).pipe_input("k", "x")


def test_deserialization_error_fails_with_topic_partition_offset() -> None:
    def build(b: StreamsBuilder) -> None:
        b.stream("in", key=str, value=int).to("out")

    with driver_for(build) as d:
        topic = d.input_topic("in", key=str, value=int)
        topic.pipe_input("k", 1)
        with pytest.raises(DeserializationError, match=r"value of the record at in\[0\] offset 1") as info:
            topic.pipe_raw(b"k", b"abc")
        assert (info.value.topic, info.value.partition, info.value.offset) == ("in", 0, 1)


def test_deserialization_error_skip_and_dead_letter() -> None:
    from streams import DeadLetterQueue

    b = StreamsBuilder()
    b.stream("in", key=str, value=int).to("out")
    with TopologyTestDriver(b.build(), deserialization_error_handler="skip") as d:
        topic = d.input_topic("in", key=str, value=int)
        topic.pipe_raw(b"k", b"abc")
        topic.pipe_input("k", 2)
        assert d.output_topic("out", key=str, value=int).read_values() == [2]
    with TopologyTestDriver(b.build(), deserialization_error_handler=DeadLetterQueue("dlq")) as d:
        d.input_topic("in", key=str, value=int).pipe_raw(b"k", b"abc")
        rec = d.output_topic("dlq", key=bytes, value=bytes).read_record()
        assert (rec.key, rec.value) == (b"k", b"abc")
        headers = dict(rec.headers)
        assert headers["schemakit.dlq.topic"] == b"in"
        assert headers["schemakit.dlq.offset"] == b"0"
        assert b"8 bytes" in headers["schemakit.dlq.error"]


def test_custom_partitioner_and_explicit_store_spec() -> None:
    b = StreamsBuilder()
    s = b.stream("in", key=str, value=str)
    s.group_by_key().count(store=StoreSpec("c", kind="memory", cache=False))
    s.to("out", partitioner=lambda k, v, n: n - 1)
    with TopologyTestDriver(b.build()) as d:
        d.input_topic("in", key=str, value=str).pipe_input("k", "v")
        assert d.output_topic("out", key=str, value=str).read_key_values() == [("k", "v")]
        assert d.get_key_value_store("c").get("k") == 1


def test_timestamps_flow_from_input_to_output() -> None:
    def build(b: StreamsBuilder) -> None:
        b.stream("in", key=str, value=str).group_by_key().count(store="c").to_stream().to("out", value=int)

    with driver_for(build) as d:
        topic = d.input_topic("in", key=str, value=str, start_timestamp=1000, auto_advance_ms=10)
        topic.pipe_key_values([("a", "x"), ("a", "y")])
        assert [(r.value, r.timestamp) for r in d.output_topic("out", key=str, value=int).read_records()] == [
            (1, 1000),
            (2, 1010),
        ]


def test_headers_pass_through_stateless_ops_but_not_into_aggregates() -> None:
    def build(b: StreamsBuilder) -> None:
        s = b.stream("in", key=str, value=str)
        s.map_values(str.upper).to("copy")
        s.group_by_key().count(store="c").to_stream().to("counts", value=int)

    with driver_for(build) as d:
        d.input_topic("in", key=str, value=str).pipe_input("k", "v", headers=[("trace", b"1")])
        assert d.output_topic("copy", key=str, value=str).read_record().headers == (("trace", b"1"),)
        assert d.output_topic("counts", key=str, value=int).read_record().headers == ()
