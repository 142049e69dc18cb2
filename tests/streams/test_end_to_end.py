"""End to end on both logs (SQLite, and the Kafka-protocol test broker): word count and the order
aggregate over 4 input partitions, threads, restart from the local checkpoint, error paths."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from streams import CoPartitioningError, MissingTopicError, StreamsBuilder
from streams.app import StreamsApp
from streams.changelog import BARRIER_KEY
from streams.log import Log
from streams.record_serdes import INT
from tests.streams.topologies import (
    make_lines,
    make_orders,
    order_totals,
    reference_totals,
    reference_word_count,
    word_count,
)
from tests.support.topics import create_topics, last_values, produce, read_to_end


def run_until(app: StreamsApp, predicate: Callable[[StreamsApp], bool], timeout: float = 60.0) -> None:
    assert app.wait_until(predicate, timeout), f"app did not reach the expected state; metrics {app.metrics()}"


def produce_orders(log: Log, topic: str, n: int, start: int = 0) -> list[dict[str, Any]]:
    """``n`` new orders (``make_orders``), written to ``topic`` keyed by order id: the orders."""
    orders = make_orders(n, start=start)
    produce(log, topic, [(f"o{o['id']}", o) for o in orders])
    return orders


def store_dict(app: StreamsApp, store: str) -> dict:
    try:
        return dict(app.store(store).all())
    except Exception:
        return {}


def test_word_count(log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path) -> None:
    text, out, app_id = names("text"), names("word-counts"), names("wc")
    create_topics(log, 4, text, out)
    lines = make_lines(400)
    produce(log, text, [(f"line{i}", line) for i, line in enumerate(lines)], value=str.encode)
    expected = reference_word_count(lines)
    app = StreamsApp(word_count(text, out), app_id, log_url, state_dir=tmp_path / "state", commit_interval_ms=200)
    with app:
        run_until(app, lambda a: store_dict(a, "counts") == expected)
        assert app.tasks() == ["0_0", "0_1", "0_2", "0_3", "1_0", "1_1", "1_2", "1_3"]
        assert app.store("counts").get("alpha") == expected["alpha"]
    assert last_values(read_to_end(log, out), value=INT.deserialize) == expected
    # The repartition and changelog topics exist with the expected names and partitions.
    rep = log.describe_topic(f"{app_id}-counts-repartition")
    changelog = log.describe_topic(f"{app_id}-counts-changelog")
    assert rep is not None and rep.partitions == 4 and not rep.compacted
    assert changelog is not None and changelog.partitions == 4 and changelog.compacted


@pytest.mark.parametrize("threads", [1, 2])
def test_order_totals_over_four_partitions(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path, threads: int
) -> None:
    orders_topic, out, app_id = names("orders"), names("customer-totals"), names("billing")
    create_topics(log, 4, orders_topic, out)
    orders = produce_orders(log, orders_topic, 2000)
    expected = reference_totals(orders)
    app = StreamsApp(
        order_totals(orders_topic, out),
        app_id,
        log_url,
        state_dir=tmp_path / "state",
        commit_interval_ms=200,
        num_threads=threads,
    )
    with app:
        run_until(app, lambda a: store_dict(a, "totals") == expected)
        assert len(app.tasks()) == 8
        # More input while running is picked up too.
        more = produce_orders(log, orders_topic, 500, start=2000)
        expected = reference_totals(orders + more)
        run_until(app, lambda a: store_dict(a, "totals") == expected)
    assert last_values(read_to_end(log, out)) == expected


def test_restart_restores_from_local_checkpoint(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    """A clean restart replays nothing (the checkpoint is at the changelog's end); new input after the
    restart continues from the restored state; a lost state directory replays the whole changelog."""
    orders_topic, out, app_id = names("orders"), names("totals-out"), names("restart")
    create_topics(log, 4, orders_topic, out)
    orders = produce_orders(log, orders_topic, 1500)
    state = tmp_path / "state"

    def app() -> StreamsApp:
        return StreamsApp(order_totals(orders_topic, out), app_id, log_url, state_dir=state, commit_interval_ms=200)

    first = app()
    with first:
        run_until(first, lambda a: store_dict(a, "totals") == reference_totals(orders))
    assert first.metrics()["restored"] == {"totals": 0}
    # Only tasks with stores have a state directory: <state_dir>/<application_id>/<task id>, beside the
    # instance's lock and id.
    assert sorted(p.name for p in (state / app_id).iterdir()) == [".instance-id", ".lock", "1_0", "1_1", "1_2", "1_3"]
    assert (state / app_id / "1_0" / ".checkpoint").is_file()

    more = produce_orders(log, orders_topic, 300, start=1500)
    second = app()
    with second:
        run_until(second, lambda a: store_dict(a, "totals") == reference_totals(orders + more))
    assert second.metrics()["restored"] == {"totals": 0}

    changelog = [r for r in read_to_end(log, f"{app_id}-totals-changelog") if r.key != BARRIER_KEY]
    assert len(changelog) > len(reference_totals(orders))
    for task_dir in (state / app_id).iterdir():
        for path in sorted(task_dir.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
    third = app()
    with third:
        run_until(
            third,
            lambda a: (
                a.metrics()["restored"] == {"totals": len(changelog)}
                and store_dict(a, "totals") == reference_totals(orders + more)
            ),
        )


def test_in_memory_store_restores_whole_changelog_on_restart(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    orders_topic, out, app_id = names("orders"), names("totals-out"), names("memory")
    create_topics(log, 4, orders_topic, out)
    orders = produce_orders(log, orders_topic, 800)
    expected = reference_totals(orders)
    topology = order_totals(orders_topic, out, store_kind="memory")
    with StreamsApp(topology, app_id, log_url, state_dir=tmp_path / "s", commit_interval_ms=200) as first:
        run_until(first, lambda a: store_dict(a, "totals") == expected)
    changelog = [r for r in read_to_end(log, f"{app_id}-totals-changelog") if r.key != BARRIER_KEY]
    with StreamsApp(topology, app_id, log_url, state_dir=tmp_path / "s", commit_interval_ms=200) as second:
        run_until(second, lambda a: a.metrics()["restored"] == {"totals": len(changelog)})
        assert store_dict(second, "totals") == expected


def test_missing_source_topic_is_named(log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path) -> None:
    app = StreamsApp(word_count(names("nope"), names("out")), names("app"), log_url, state_dir=tmp_path)
    with pytest.raises(MissingTopicError, match=r"source topic 'nope-\w+' does not exist"):
        app.start()
    app.close()


def test_co_partitioning_is_checked(log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path) -> None:
    a, b_topic = names("a"), names("b")
    log.create_topic(a, 4)
    log.create_topic(b_topic, 2)
    b = StreamsBuilder()
    b.stream(a).merge(b.stream(b_topic)).group_by_key().count(store="c")
    app = StreamsApp(b.build(), names("app"), log_url, state_dir=tmp_path)
    with pytest.raises(CoPartitioningError, match=rf"not co-partitioned \({a} has 4, {b_topic} has 2\)"):
        app.start()
    app.close()


def test_deserialization_error_stops_the_app_naming_the_record(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    src, out = names("in"), names("out")
    create_topics(log, 1, src, out)
    produce(
        log,
        src,
        [("k1", 1), ("k2", "not-an-int")],
        value=lambda v: INT.serialize(v) if isinstance(v, int) else orjson.dumps(v),
    )
    b = StreamsBuilder()
    b.stream(src, key=str, value=int).to(out, key=str, value=int)
    app = StreamsApp(b.build(), names("app"), log_url, state_dir=tmp_path, commit_interval_ms=100)
    with pytest.raises(Exception, match=rf"value of the record at {src}\[0\] offset 1"):
        app.run()
    assert app.state == "ERROR"
    assert last_values(read_to_end(log, out, quiet=0.5), value=INT.deserialize) == {"k1": 1}


def test_wall_clock_punctuation_runs_in_the_app(tmp_path: Path, names: Callable[[str], str]) -> None:
    """A processor's wall-clock punctuator fires on the stream thread even when no input arrives."""

    from streams import Processor, ProcessorContext, PunctuationType, StoreSpec
    from streams.log import open_log

    class Flusher(Processor):
        """Buffers values in a store; every 100 ms of wall-clock time emits and clears them."""

        def init(self, context: ProcessorContext) -> None:
            super().init(context)
            self.buffer = context.get_state_store("buffer")
            context.schedule(100, PunctuationType.WALL_CLOCK_TIME, self.emit)

        def process(self, key: Any, value: Any) -> None:
            self.buffer.put(key, value)

        def emit(self, now: int) -> None:
            for key, value in list(self.buffer.all()):
                self.context.forward(key, value)
                self.buffer.delete(key)

    url = f"sqlite:///{tmp_path / 'log'}"
    lg = open_log(url)
    src, out = names("in"), names("out")
    create_topics(lg, 2, src, out)
    b = StreamsBuilder()
    b.add_state_store(StoreSpec("buffer", key=str, value=str, kind="memory"))
    b.stream(src, key=str, value=str).process(Flusher, stores=["buffer"], key=str, value=str).to(out)
    with StreamsApp(b.build(), names("punct"), url, state_dir=tmp_path / "s", commit_interval_ms=100) as app:
        assert app.wait_until(lambda a: len(a.tasks()) == 2, 30)
        produce(lg, src, [("a", "1"), ("b", "2"), ("a", "3")], value=str.encode)
        assert app.wait_until(
            lambda a: last_values(read_to_end(lg, out, quiet=0.1), value=bytes.decode) == {"a": "3", "b": "2"}, 30
        )
        assert app.store("buffer").approximate_num_entries() == 0
    lg.close()
