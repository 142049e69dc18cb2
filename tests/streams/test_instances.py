"""Two instances of one application on the Kafka-protocol test broker, as subprocesses: the group
splits the tasks; after ``kill -9`` of one, the other takes its tasks over, restores their state from
the changelog, and the final aggregates match a reference computation."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from streams.log import TopicPartition, open_log
from tests.streams.instances import Instance
from tests.streams.topologies import make_orders, reference_totals
from tests.support.topics import create_topics, last_values, produce, read_all
from tests.support.waiting import wait_for


@pytest.mark.kafka
def test_two_instances_split_work_and_survive_kill_9(
    private_kafka_log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    log = open_log(private_kafka_log_url)
    orders_topic, out, app_id = names("orders"), names("customer-totals"), names("billing")
    create_topics(log, 4, orders_topic, out)
    inputs = [TopicPartition(orders_topic, p) for p in range(4)]
    repartition = [TopicPartition(f"{app_id}-totals-repartition", p) for p in range(4)]

    orders = make_orders(3000)
    where: dict[str, tuple[int, int]] = produce(log, orders_topic, [(f"o{o['id']}", o) for o in orders])

    def end_offsets() -> dict[TopicPartition, int]:
        ends = {tp: 0 for tp in inputs}
        for partition, offset in list(where.values()):
            tp = TopicPartition(orders_topic, partition)
            ends[tp] = max(ends[tp], offset + 1)
        return ends

    def committed(tps: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        return log.committed(app_id, tps)

    instances: list[Instance] = []
    try:
        for name in ("a", "b"):
            args = [private_kafka_log_url, app_id, str(tmp_path / f"state-{name}"), orders_topic, out, "1500"]
            instances.append(Instance(name, args, tmp_path))
        a, b = instances

        # Work splits: every task runs on exactly one instance, and both instances have tasks.
        all_tasks = [f"{s}_{p}" for s in (0, 1) for p in range(4)]
        wait_for(
            lambda: a.tasks() and b.tasks() and sorted(a.tasks() + b.tasks()) == all_tasks,
            what="the two instances to split the 8 tasks",
        )
        assert not set(a.tasks()) & set(b.tasks())
        a_inputs = [tp for tp in inputs if f"0_{tp.partition}" in a.tasks()]
        assert a_inputs, "the group gave instance a no input partition"

        # Let the first batch be processed and committed (both sub-topologies) before the kill.
        wait_for(lambda: committed(inputs) == end_offsets(), what="the first orders to be committed")
        wait_for(lambda: all(c for c in committed(repartition).values()), what="the aggregation to commit")

        # Keep producing while instance a is killed mid-stream.
        more = make_orders(3000, start=3000)

        def feed() -> None:
            with log.producer() as producer:
                for i, o in enumerate(more):

                    def done(md: Any, err: Any, key: str = f"o{o['id']}") -> None:
                        if md is not None:
                            where[key] = (md.partition, md.offset)

                    producer.send(orders_topic, orjson.dumps(o), f"o{o['id']}".encode(), on_delivery=done)
                    if i % 100 == 99:
                        producer.flush()
                        time.sleep(0.02)

        feeder = threading.Thread(target=feed)
        feeder.start()
        time.sleep(1.0)
        a.proc.kill()  # SIGKILL: no commit, no leave-group, no checkpoint
        a.proc.wait()
        committed_at_kill = committed(a_inputs)
        feeder.join()

        # b takes over every task and restores a's stores from the changelog.
        wait_for(lambda: b.tasks() == all_tasks, what="instance b to take over all tasks")
        restored_by_b = b.latest["restored"].get("totals", 0)
        assert restored_by_b > 0
        assert any(
            task_id in {f"1_{tp.partition}" for tp in a_inputs} and count > 0
            for task_id, _, count in b.latest["restores"]
        )

        wait_for(lambda: committed(inputs) == end_offsets(), what="all orders to be committed")
        rep_records = read_all(log, repartition[0].topic)
        rep_ends = {tp: 0 for tp in repartition}
        for r in rep_records:
            tp = TopicPartition(r.topic, r.partition)
            rep_ends[tp] = max(rep_ends[tp], r.offset + 1)
        wait_for(lambda: committed(repartition) == rep_ends, what="the aggregation to catch up")
        assert b.stop() == 0
        assert b.latest == {"state": "NOT_RUNNING", "exit": True}
    finally:
        for inst in instances:
            if inst.proc.poll() is None:
                inst.proc.kill()
                inst.proc.wait()

    # What at-least-once allows, exactly: an order reaches the repartition topic once, or twice if a
    # had read it but not committed it when killed (its input offset >= a's committed offset then);
    # b redoes that work. The aggregation itself never double counts: b restores only changelog state
    # that a committed, so the totals are exactly the aggregation of the repartition topic.
    all_orders = orders + more
    paid = {f"o{o['id']}" for o in all_orders if o["paid"]}
    seen = Counter(f"o{orjson.loads(r.value)['id']}" for r in rep_records)
    assert set(seen) == paid
    for order_key, count in seen.items():
        if count > 1:
            partition, offset = where[order_key]
            tp = TopicPartition(orders_topic, partition)
            assert count == 2 and tp in committed_at_kill, (order_key, count, where[order_key])
            assert offset >= (committed_at_kill[tp] or 0), (order_key, where[order_key], committed_at_kill)
    by_id = {f"o{o['id']}": o for o in all_orders}
    expected = reference_totals([by_id[k] for k, n in seen.items() for _ in range(n)])
    final = last_values(read_all(log, out))
    assert final == expected
    duplicated = [by_id[k] for k, n in seen.items() if n > 1]
    assert expected == reference_totals(all_orders + duplicated)
    log.close()


def changelog_after_checkpoint(
    log: Any, app_id: str, state: Path, committed: dict[TopicPartition, int | None]
) -> tuple[int, int]:
    """(records a restore from the local checkpoints must apply, all records of the changelog)."""
    from streams.changelog import BARRIER_KEY, SOURCE_HEADER

    changelog = f"{app_id}-totals-changelog"
    checkpoints = {}
    for p in range(4):
        path = state / app_id / f"1_{p}" / ".checkpoint"
        if path.is_file():
            checkpoints.update(orjson.loads(path.read_bytes())["offsets"])
    due = total = 0
    for r in read_all(log, changelog, quiet=0.5):
        if r.key == BARRIER_KEY:
            continue
        total += 1
        if r.offset < checkpoints.get(f"{changelog}:{r.partition}", 0):
            continue
        source = dict(r.headers)[SOURCE_HEADER]
        uncommitted = any(
            committed.get(TopicPartition(t, p), -1) is None or off > (committed.get(TopicPartition(t, p)) or 0)
            for t, p, off in orjson.loads(source)
        )
        due += not uncommitted
    return due, total


def test_restart_after_kill_9_restores_only_what_follows_the_checkpoint(
    names: Callable[[str], str], tmp_path: Path
) -> None:
    """kill -9 leaves the checkpoint of the last commit: the restart replays only the changelog records
    after it whose input was committed (usually none: the checkpoint follows each commit), never the
    whole changelog; records flushed after the last commit are skipped and their input redone."""
    from streams.app import StreamsApp
    from tests.streams.topologies import order_totals

    url = f"sqlite:///{tmp_path / 'log'}"
    log = open_log(url)
    orders_topic, out, app_id = names("orders"), names("totals"), names("ckpt")
    create_topics(log, 4, orders_topic, out)
    state = tmp_path / "state"
    # a 2 s session (the suite's): the restart below waits out the killed instance's session before it takes its tasks
    inst = Instance("a", [url, app_id, str(state), orders_topic, out, "200", "--session-ms", "2000"], tmp_path)
    orders: list[dict[str, Any]] = []
    try:
        wait_for(lambda: len(inst.tasks()) == 8, what="the instance to start")
        with log.producer() as producer:
            for batch in range(30):
                chunk = make_orders(200, start=batch * 200)
                orders += chunk
                for o in chunk:
                    producer.send(orders_topic, orjson.dumps(o), f"o{o['id']}".encode())
                producer.flush()
                time.sleep(0.05)
                if batch == 15:
                    inst.proc.kill()  # mid-stream: the rest is written while the instance is down
                    inst.proc.wait()
    finally:
        if inst.proc.poll() is None:
            inst.proc.kill()
            inst.proc.wait()
        inst.stderr.close()
    repartition = [TopicPartition(f"{app_id}-totals-repartition", p) for p in range(4)]
    due, total = changelog_after_checkpoint(log, app_id, state, log.committed(app_id, repartition))
    assert due < total

    app = StreamsApp(
        order_totals(orders_topic, out), app_id, url, state_dir=state, commit_interval_ms=200, session_timeout_ms=2000
    )
    with app:
        assert app.wait_until(lambda a: len(a.tasks()) == 8, 30)
        assert app.metrics()["restored"] == {"totals": due}
        inputs = [TopicPartition(orders_topic, p) for p in range(4)]
        ends = log.end_offsets(orders_topic)
        wait_for(
            lambda: log.committed(app_id, inputs) == {tp: ends[tp.partition] for tp in inputs},
            what="all orders to be committed",
        )
        rep_orders = [orjson.loads(r.value) for r in read_all(log, repartition[0].topic, quiet=0.5)]
        assert {o["id"] for o in rep_orders} == {o["id"] for o in orders if o["paid"]}
        expected = reference_totals(rep_orders)  # the aggregation of what reached the repartition topic
        assert app.wait_until(lambda a: dict(a.store("totals").all()) == expected, 60)
    log.close()


@pytest.mark.kafka
def test_clean_rebalances_move_tasks_without_redoing_work(
    private_kafka_log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    """A second instance joins, then leaves cleanly: tasks move both ways, each move commits first, so
    no input is processed twice (every order reaches the repartition topic exactly once)."""
    from streams.app import StreamsApp
    from tests.streams.topologies import order_totals

    log = open_log(private_kafka_log_url)
    orders_topic, out, app_id = names("orders"), names("totals"), names("rebalance")
    create_topics(log, 4, orders_topic, out)
    inputs = [TopicPartition(orders_topic, p) for p in range(4)]
    where: dict[str, tuple[int, int]] = {}
    orders: list[dict[str, Any]] = []

    def feed(start: int) -> None:
        batch = make_orders(700, start=start)
        orders.extend(batch)
        where.update(produce(log, orders_topic, [(f"o{o['id']}", o) for o in batch]))

    def all_committed() -> bool:
        ends = {tp: 0 for tp in inputs}
        for partition, offset in where.values():
            tp = TopicPartition(orders_topic, partition)
            ends[tp] = max(ends[tp], offset + 1)
        return log.committed(app_id, inputs) == ends

    def app(name: str) -> StreamsApp:
        return StreamsApp(
            order_totals(orders_topic, out),
            app_id,
            private_kafka_log_url,
            state_dir=tmp_path / name,
            commit_interval_ms=200,
        )

    first = app("first")
    with first:
        feed(0)
        wait_for(all_committed, what="the first batch")
        second = app("second")
        with second:
            wait_for(
                lambda: first.tasks() and second.tasks() and len(first.tasks() + second.tasks()) == 8,
                what="the tasks to split",
            )
            assert not set(first.tasks()) & set(second.tasks())
            feed(700)
            wait_for(all_committed, what="the second batch")
            # The second instance got the first one's state of the tasks it took over: tailed by a standby
            # while the first one let go (cooperative hand-over), then at most a tail restored.
            assert second.metrics()["restored"]["totals"] + second.metrics()["standby_records"] > 0
        wait_for(lambda: len(first.tasks()) == 8, what="the first instance to take all tasks back")
        feed(1400)
        wait_for(all_committed, what="the third batch")
        expected = reference_totals(orders)
        wait_for(lambda: dict(first.store("totals").all()) == expected, timeout=120, what="the totals")
    paid = {o["id"] for o in orders if o["paid"]}

    def repartitioned() -> Counter[int] | None:
        seen = Counter(orjson.loads(r.value)["id"] for r in read_all(log, f"{app_id}-totals-repartition"))
        return seen if set(seen) == paid else None

    # Read again while some are missing: once, under a full suite's load, a read from the test broker stopped
    # short of 38 records that the totals above had counted (so they were in the topic).
    seen = wait_for(repartitioned, timeout=60, what="every paid order in the repartition topic")
    assert set(seen.values()) == {1}
    assert last_values(read_all(log, out)) == expected
    log.close()
