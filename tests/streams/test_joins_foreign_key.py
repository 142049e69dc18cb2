"""Foreign-key table-table joins (KIP-213): ``left.join(right, joiner, foreign_key=...)``.

The scenarios are Kafka Streams' ``KTableKTableForeignKeyJoinIntegrationTest`` expectations (left values
``"<value>|<foreign key>"``, joiner ``(left,right)``), as the records the join emits, in order: a left row
joins the right row it points to; a foreign key that changes unsubscribes the row from the old one (no
stale result); left deletes give tombstones; right deletes give tombstones (inner) or ``(left,null)``
(left join); a right update reaches every left row that points to it. End to end (SQLite and the test
broker): tables of 4 and 3 partitions, internal topics sized as Kafka Streams does, the join's stores
restored across a restart.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streams import StreamsApp, StreamsBuilder, TopologyTestDriver
from streams.log import Log
from tests.streams.scenarios import pipe, read_rows
from tests.support.topics import last_values, produce, read_to_end
from tests.support.waiting import wait_for


def joiner(left: str, right: str | None) -> str:
    return f"({left},{'null' if right is None else right})"


def fk(value: str) -> str | None:
    key = value.split("|")[1]
    return None if key == "returnNull" else key


def build(
    left_join: bool, *, left: str = "left", right: str = "right", out: str = "out", name: str | None = None
) -> StreamsBuilder:
    b = StreamsBuilder()
    lt = b.table(left, key=str, value=str)
    rt = b.table(right, key=str, value=str)
    join = lt.left_join if left_join else lt.join
    join(rt, joiner, foreign_key=fk, store="joined", value=str, name=name).to_stream().to(out, key=str, value=str)
    return b


def run(left_join: bool, steps: list[tuple[str, list[tuple[str, str | None]]]]) -> list[list[tuple[str, Any]]]:
    """Pipe each step's (key, value) rows into its table; the join's output per step, without timestamps."""
    out = []
    with TopologyTestDriver(build(left_join).build()) as d:
        for ts, (topic, rows) in enumerate(steps):
            pipe(d, topic, [(k, v, ts) for k, v in rows], str, str)
            out.append([(k, v) for k, v, _ in read_rows(d, "out", str, str)])
    return out


BOTH = pytest.mark.parametrize("left_join", [False, True], ids=["inner", "left"])


@BOTH
def test_join_from_left_then_delete_left(left_join: bool) -> None:
    assert run(
        left_join,
        [
            ("right", [("rhs1", "rhsValue1"), ("rhs2", "rhsValue2"), ("rhs3", "rhsValue3")]),
            ("left", [("lhs1", "lhsValue1|rhs1"), ("lhs2", "lhsValue2|rhs2")]),
            ("left", [("lhs3", "lhsValue3|rhs1")]),  # another reference to an existing foreign key
            ("left", [("lhs1", None)]),
        ],
    ) == [
        [],
        [("lhs1", "(lhsValue1|rhs1,rhsValue1)"), ("lhs2", "(lhsValue2|rhs2,rhsValue2)")],
        [("lhs3", "(lhsValue3|rhs1,rhsValue1)")],
        [("lhs1", None)],
    ]


@BOTH
def test_join_from_right_then_delete_right(left_join: bool) -> None:
    half = [("lhs1", "(lhsValue1|rhs1,null)"), ("lhs2", "(lhsValue2|rhs2,null)"), ("lhs3", "(lhsValue3|rhs1,null)")]
    assert run(
        left_join,
        [
            ("left", [("lhs1", "lhsValue1|rhs1"), ("lhs2", "lhsValue2|rhs2"), ("lhs3", "lhsValue3|rhs1")]),
            ("right", [("rhs1", "rhsValue1")]),  # fans out to both subscribers
            ("right", [("rhs2", "rhsValue2")]),
            ("right", [("rhs3", "rhsValue3")]),  # nobody points to it
            ("right", [("rhs1", None)]),
        ],
    ) == [
        half if left_join else [],
        [("lhs1", "(lhsValue1|rhs1,rhsValue1)"), ("lhs3", "(lhsValue3|rhs1,rhsValue1)")],
        [("lhs2", "(lhsValue2|rhs2,rhsValue2)")],
        [],
        [
            ("lhs1", "(lhsValue1|rhs1,null)" if left_join else None),
            ("lhs3", "(lhsValue3|rhs1,null)" if left_join else None),
        ],
    ]


@BOTH
def test_deleting_non_joining_and_non_existing_rows(left_join: bool) -> None:
    assert run(
        left_join,
        [
            ("left", [("lhs0", None)]),  # never existed: nothing to delete
            ("left", [("lhs1", "lhsValue1|rhs1")]),
            ("left", [("lhs1", None)]),  # an inner join cannot know whether it had a result: a tombstone anyway
            ("left", [("lhs1", None)]),  # deleting again is idempotent
        ],
    ) == [[], [("lhs1", "(lhsValue1|rhs1,null)")] if left_join else [], [("lhs1", None)], []]


@BOTH
def test_moving_between_missing_and_existing_foreign_keys(left_join: bool) -> None:
    def half(fk: str) -> tuple[str, str | None]:
        return ("lhs1", f"(lhsValue1|{fk},null)" if left_join else None)

    assert run(
        left_join,
        [
            ("left", [("lhs1", "lhsValue1|rhs1")]),
            ("left", [("lhs1", "lhsValue1|rhs2")]),
            ("left", [("lhs1", "lhsValue1|rhs3")]),
            ("right", [("rhs1", "rhsValue1")]),  # referenced before, not now: no change
            ("left", [("lhs1", "lhsValue1|rhs1")]),
            ("left", [("lhs1", "lhsValue1|rhs2")]),
        ],
    ) == [
        [half("rhs1")] if left_join else [],
        [half("rhs2")],
        [half("rhs3")],
        [],
        [("lhs1", "(lhsValue1|rhs1,rhsValue1)")],
        [half("rhs2")],
    ]


@BOTH
def test_changing_the_foreign_key_unsubscribes_the_old_one(left_join: bool) -> None:
    with TopologyTestDriver(build(left_join).build()) as d:
        pipe(d, "right", [("rhs1", "rhsValue1", 0), ("rhs2", "rhsValue2", 1)], str, str)
        pipe(d, "left", [("lhs1", "lhsValue1|rhs1", 2), ("lhs1", "lhsValue1|rhs2", 3)], str, str)
        pipe(d, "right", [("rhs1", "rhsValue1Delta", 4)], str, str)  # the old key's update reaches nobody
        assert read_rows(d, "out", str, str) == [
            ("lhs1", "(lhsValue1|rhs1,rhsValue1)", 2),
            ("lhs1", "(lhsValue1|rhs2,rhsValue2)", 3),
        ]
        assert dict(d.get_key_value_store("joined").all()) == {"lhs1": "(lhsValue1|rhs2,rhsValue2)"}
        subscribers = [k for k, _ in d.get_key_value_store("KTABLE-FK-JOIN-0000000004-subscription-store").all()]
        assert [(k.foreign_key, k.primary_key) for k in subscribers] == [("rhs2", "lhs1")]


def test_a_none_foreign_key() -> None:
    assert run(
        True,
        [
            ("left", [("lhs1", "lhsValue1|returnNull")]),
            ("left", [("lhs1", "lhsValue1|rhs1")]),
            ("left", [("lhs1", "lhsValue2|returnNull")]),
            ("left", [("lhs1", None)]),
        ],
    ) == [
        [("lhs1", "(lhsValue1|returnNull,null)")],  # a left join emits at once, without asking the right side
        [("lhs1", "(lhsValue1|rhs1,null)")],
        [("lhs1", "(lhsValue2|returnNull,null)")],
        [("lhs1", None)],
    ]
    assert run(
        False,
        [
            ("right", [("rhs1", "r")]),
            ("left", [("lhs1", "v|rhs1")]),
            ("left", [("lhs1", "v|returnNull")]),
            ("left", [("lhs1", None)]),
        ],
    ) == [[], [("lhs1", "(v|rhs1,r)")], [("lhs1", None)], []]


def test_kafka_should_emit_record_on_null_foreign_key_for_left_joins() -> None:
    """KTableKTableForeignKeyJoinIntegrationTest.shouldEmitRecordOnNullForeignKeyForLeftJoins: an extractor that
    always gives None; the left join emits ``(value, null)`` at once, into the output and the join's store."""
    b = StreamsBuilder()
    lt, rt = b.table("left", key=str, value=str), b.table("right", key=str, value=str)
    lt.left_join(rt, joiner, foreign_key=lambda v: None, store="joined", value=str).to_stream().to(
        "out", key=str, value=str
    )
    with TopologyTestDriver(b.build()) as d:
        pipe(d, "left", [("lhs1", "lhsValue1|rhs1", 0)], str, str)
        assert [(k, v) for k, v, _ in read_rows(d, "out", str, str)] == [("lhs1", "(lhsValue1|rhs1,null)")]
        assert dict(d.get_key_value_store("joined").all()) == {"lhs1": "(lhsValue1|rhs1,null)"}
        assert d.dropped_records == 0


def test_kafka_should_emit_record_when_old_and_new_fk_differ() -> None:
    """KTableKTableForeignKeyJoinIntegrationTest.shouldEmitRecordWhenOldAndNewFkDiffer: a row whose foreign key
    becomes None gives ``(value, null)`` and leaves its old foreign key's subscribers."""
    with TopologyTestDriver(build(True).build()) as d:
        subscriptions = d.get_key_value_store("KTABLE-FK-JOIN-0000000004-subscription-store")
        pipe(d, "left", [("lhs1", "lhsValue1|rhs1", 0)], str, str)
        assert [(k, v) for k, v, _ in read_rows(d, "out", str, str)] == [("lhs1", "(lhsValue1|rhs1,null)")]
        assert [(k.foreign_key, k.primary_key) for k, _ in subscriptions.all()] == [("rhs1", "lhs1")]
        pipe(d, "left", [("lhs1", "lhsValue1|returnNull", 0)], str, str)
        assert [(k, v) for k, v, _ in read_rows(d, "out", str, str)] == [("lhs1", "(lhsValue1|returnNull,null)")]
        assert list(subscriptions.all()) == []
        assert dict(d.get_key_value_store("joined").all()) == {"lhs1": "(lhsValue1|returnNull,null)"}


def test_a_stale_response_is_dropped() -> None:
    """Two updates of one left row within one step (a flat_map feeding an uncached reduce): the answer to
    the first (its foreign key rhs1) arrives after the row moved to rhs2, and its hash no longer matches."""
    b = StreamsBuilder()
    lt = (
        b.stream("left-updates", key=str, value="json")
        .flat_map(lambda k, vs: [(k, v) for v in vs])
        .group_by_key(key=str, value=str)
        .reduce(lambda old, new: new, store="left-rows", cache=False)
    )
    rt = b.table("right", key=str, value=str)
    lt.join(rt, joiner, foreign_key=fk, value=str).to_stream().to("out", key=str, value=str)
    with TopologyTestDriver(b.build()) as d:
        pipe(d, "right", [("rhs1", "rhsValue1", 0), ("rhs2", "rhsValue2", 1)], str, str)
        pipe(d, "left-updates", [("lhs1", ["lhsValue1|rhs1", "lhsValue1|rhs2"], 2)], str, "json")
        assert read_rows(d, "out", str, str) == [("lhs1", "(lhsValue1|rhs2,rhsValue2)", 2)]


def test_describe_names_the_subscription_topics() -> None:
    text = build(False, name="with-customer").build().describe()
    sink = "Sink: with-customer-subscription-registration-sink"
    assert f"{sink} (topic: with-customer-subscription-registration-topic)" in text
    assert "(topics: [with-customer-subscription-response-topic])" in text
    assert "Processor: with-customer-subscription-receive (stores: [with-customer-subscription-store, " in text


# -- end to end -------------------------------------------------------------------------------------------


def test_foreign_key_join_end_to_end_with_restart(
    kill_log: Log, kill_log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    """On Kafka, a broker of its own (``kill_log_url``): on the shared one, late in a full run, the first join
    result once took longer than the wait (CI)."""
    log, log_url = kill_log, kill_log_url
    left_t, right_t, out, app_id = names("orders"), names("customers"), names("with-customer"), names("fk")
    log.create_topic(left_t, 4)
    log.create_topic(right_t, 3)  # not co-partitioned with the left side: the join needs no co-partitioning
    log.create_topic(out, 4)
    customers = {f"c{i}": f"name{i}" for i in range(8)}
    orders = {f"o{i}": f"order{i}|c{i % 10}" for i in range(30)}  # c8 and c9 do not exist
    produce(log, right_t, list(customers.items()), value=str.encode)
    produce(log, left_t, list(orders.items()), value=str.encode)
    topology = build(False, left=left_t, right=right_t, out=out, name="with-customer").build()

    def app() -> StreamsApp:
        return StreamsApp(topology, app_id, log_url, state_dir=tmp_path / "s", commit_interval_ms=100)

    def results() -> dict[str, Any]:
        return {k: v for k, v in last_values(read_to_end(log, out, quiet=0.5), value=bytes.decode).items() if v}

    def reference() -> dict[str, str]:
        return {k: joiner(v, customers[fk(v) or ""]) for k, v in orders.items() if fk(v) in customers}

    with app() as a:
        wait_for(lambda: results() == reference(), what="every order joined with its customer")
        assert sorted(a.store("joined").all()) == sorted(reference().items())
    registration = log.describe_topic(f"{app_id}-with-customer-subscription-registration-topic")
    response = log.describe_topic(f"{app_id}-with-customer-subscription-response-topic")
    assert registration is not None and registration.partitions == 3  # partitioned as the right table
    assert response is not None and response.partitions == 4  # partitioned as the left table

    # after a restart the stores come back from their changelogs: the subscriptions fan a customer's
    # update out, the left rows are there to join the answers with
    customers["c1"] = "renamed"
    del customers["c2"]
    produce(log, right_t, [("c1", "renamed"), ("c2", None)], value=lambda v: None if v is None else v.encode())
    orders["o0"] = "order0|c1"
    produce(log, left_t, [("o0", "order0|c1")], value=str.encode)
    with app() as b:
        wait_for(lambda: results() == reference(), what="the customer updates to reach their orders")
        wait_for(lambda: sorted(b.store("joined").all()) == sorted(reference().items()), what="the result store")
