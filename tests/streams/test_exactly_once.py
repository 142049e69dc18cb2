"""``processing_guarantee="exactly_once_v2"`` end to end, on SQLite and on the Kafka-protocol test broker.

The topologies count records per key with one output per input (no record cache), so with exactly-once
the committed output of a key is exactly 1, 2, 3, ... up to its number of inputs, whatever crashed: no
output of an aborted or killed commit interval is ever visible, and the store never counts an input twice.

On the test broker (tansu) a read_committed consumer also sees aborted records, so the checks that read
outputs or changelogs after an abort skip there (they run against a real Kafka with SCHEMAKIT_TEST_KAFKA);
the checks of the restored store and of the committed offsets run everywhere.
"""

from __future__ import annotations

import itertools
import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from streams import ProcessingError, StreamsBuilder, StreamsError, Topology
from streams.app import StreamsApp
from streams.changelog import BARRIER_KEY, CHECKPOINT_FILE
from streams.log import Log, TopicPartition
from tests.streams.groups import KEYS, TASKS, Group, all_committed, outputs, partition_of
from tests.streams.instances import Instance
from tests.streams.topologies import key_counts
from tests.support.broker import TANSU_MISSING, KafkaCaps
from tests.support.topics import create_topics, read_to_end
from tests.support.waiting import wait_for

EOS = "exactly_once_v2"


def aborts_visible(log_url: str, request: pytest.FixtureRequest) -> bool:
    """Whether read_committed consumers of this log see aborted records (tansu): those checks are skipped."""
    if log_url.startswith("sqlite"):
        return False
    caps: KafkaCaps = request.getfixturevalue("kafka_caps")
    return not caps.has("read_committed_aborts")


def skip_reason() -> str:
    return f"skipped on the test broker: {TANSU_MISSING['read_committed_aborts']}"


# -- configuration ------------------------------------------------------------------------------------------


def test_only_exactly_once_v2_and_at_least_once_are_accepted(tmp_path: Path) -> None:
    topology = key_counts("in", "out")
    url = f"sqlite:///{tmp_path / 'log'}"
    for retired in ("exactly_once", "exactly_once_beta"):
        with pytest.raises(
            ValueError,
            match=rf"'{retired}' is deprecated since Kafka Streams 3.0 and not "
            r"supported: use 'exactly_once_v2'",
        ):
            StreamsApp(topology, "eos", url, state_dir=tmp_path, processing_guarantee=retired)
    with pytest.raises(ValueError, match=r"must be 'at_least_once' or 'exactly_once_v2', got 'exactly-once'"):
        StreamsApp(topology, "eos", url, state_dir=tmp_path, processing_guarantee="exactly-once")
    app = StreamsApp(topology, "eos", url, state_dir=tmp_path, processing_guarantee=EOS)
    assert app.config.exactly_once
    app.log.close()


# -- an abort in the middle of a commit interval ------------------------------------------------------------


def checked(value: dict[str, Any]) -> dict[str, Any]:
    if value.get("poison"):
        raise ValueError("poison record")
    return value


def poisonable_counts(src: str, out: str, repartition: bool) -> Topology:
    """``key_counts`` with a step that raises on ``{"poison": true}``, before the count; ``repartition``:
    grouped through a repartition topic (two sub-topologies), else counted in the source's task."""
    b = StreamsBuilder()
    checked_stream = b.stream(src, key=str, value="json").map_values(checked)
    grouped = (
        checked_stream.group_by(lambda key, _: key, key=str, value="json")
        if repartition
        else checked_stream.group_by_key()
    )
    grouped.count(store="counts", cache=False).to_stream().to(out, key=str, value=int)
    return b.build()


def feed(log: Log, topic: str, items: list[tuple[str, dict[str, Any]]]) -> None:
    with log.producer() as producer:
        for key, value in items:
            producer.send(topic, orjson.dumps(value), key.encode(), partition=0)
        producer.flush()


def counts_written(log: Log, topic: str) -> dict[str, list[int]]:
    """Per key, the counts in the (committed) output, in order."""
    by_key: dict[str, list[int]] = {}
    for r in sorted(read_to_end(log, topic, quiet=0.5), key=lambda r: r.offset):
        assert r.key is not None and r.value is not None
        by_key.setdefault(r.key.decode(), []).append(int.from_bytes(r.value, "big", signed=True))
    return by_key


def counted(app: StreamsApp) -> dict[str, int]:
    """The ``counts`` store's contents; empty while a task is not running yet."""
    try:
        return dict(app.store("counts").all())
    except StreamsError:
        return {}


def changelog_state(log: Log, topic: str) -> dict[str, int]:
    """The latest count per key in a timestamped store's changelog (committed records only), no barriers."""
    state: dict[str, int] = {}
    for r in sorted(read_to_end(log, topic, quiet=0.5), key=lambda r: (r.partition, r.offset)):
        if r.key is None or r.key == BARRIER_KEY or r.value is None:
            continue
        state[r.key.decode()] = int.from_bytes(r.value[8:], "big", signed=True)  # after the 8-byte timestamp
    return state


@pytest.mark.parametrize("repartition", [False, True], ids=["one-task", "repartitioned"])
def test_an_abort_mid_interval_leaves_the_last_committed_state(
    log: Log,
    log_url: str,
    names: Callable[[str], str],
    tmp_path: Path,
    request: pytest.FixtureRequest,
    repartition: bool,
) -> None:
    if repartition and aborts_visible(log_url, request):
        pytest.skip(f"the counting task would count aborted repartition records: {skip_reason()}")
    src, out, app_id = names("events"), names("counts"), names("eos-abort")
    create_topics(log, 1, src, out)
    tp = TopicPartition(src, 0)
    keys = [f"k{i}" for i in range(5)]
    first = [(keys[i % 5], {"i": i}) for i in range(40)]
    rest = [(keys[i % 5], {"i": i}) for i in range(40, 70)] + [("k9", {"poison": True})]
    rest += [(keys[i % 5], {"i": i}) for i in range(70, 100)]
    items = first + rest

    def app(handler: str) -> StreamsApp:
        return StreamsApp(
            poisonable_counts(src, out, repartition),
            app_id,
            log_url,
            state_dir=tmp_path / "state",
            commit_interval_ms=100,
            processing_guarantee=EOS,
            processing_exception_handler=handler,
        )

    feed(log, src, first)
    failing = app("fail")
    failing.start()
    try:
        wait_for(lambda: log.committed(app_id, [tp])[tp] == len(first), what="the first records to be committed")
        feed(log, src, rest)  # 30 records, the poison record, 30 more: processed in one commit interval or two
        with pytest.raises(ProcessingError, match=r"offset 70 failed: ValueError: poison record"):
            failing.wait_until(lambda a: False, 60)
    finally:
        failing.close()
    committed = log.committed(app_id, [tp])[tp]
    assert committed is not None and len(first) <= committed <= len(first) + 30
    done = Counter(key for key, _ in items[:committed])
    if not repartition and not aborts_visible(log_url, request):
        # What became visible is exactly what the committed offsets account for: the aborted interval's
        # outputs and changelog records never appear. (With a repartition topic the counting task may
        # not have caught up with the committed repartition records when the app stopped.)
        assert counts_written(log, out) == {k: list(range(1, n + 1)) for k, n in done.items()}
        assert changelog_state(log, f"{app_id}-counts-changelog") == dict(done)
    # A restart resumes from the committed offsets with the committed state, skipping the poison record.
    resumed = app("skip")
    resumed.start()
    try:
        wait_for(lambda: log.committed(app_id, [tp])[tp] == len(items), what="the rest to be committed")
        expected = Counter(key for key, value in items if not value.get("poison"))
        wait_for(lambda: counted(resumed) == dict(expected), what="the store to count every record once")
    finally:
        resumed.close()
    if aborts_visible(log_url, request):
        pytest.skip(f"output check {skip_reason()}")
    assert counts_written(log, out) == {k: list(range(1, n + 1)) for k, n in expected.items()}


# -- kill -9, three times -----------------------------------------------------------------------------------


PARTITIONS = 4


def test_count_is_exact_after_three_kill_9s(
    kill_log: Log, kill_log_url: str, names: Callable[[str], str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    log, log_url = kill_log, kill_log_url
    total = 100_000
    src, out, app_id = names("events"), names("counts"), names("eos-kill")
    create_topics(log, PARTITIONS, src, out)
    rng = random.Random(22)
    keys = [f"k{i:04d}" for i in range(1000)]
    sent = [rng.choice(keys) for _ in range(total)]
    with log.producer() as producer:
        for i, key in enumerate(sent):
            producer.send(src, orjson.dumps({"i": i}), key.encode())
        producer.flush()
    expected = Counter(sent)
    inputs = [TopicPartition(src, p) for p in range(PARTITIONS)]

    def committed_total() -> int:
        return sum(offset or 0 for offset in log.committed(app_id, inputs).values())

    state = tmp_path / "state"

    def checkpoints() -> list[str]:
        return sorted(path.parent.name for path in (state / app_id).glob(f"*/{CHECKPOINT_FILE}"))

    args = [
        log_url,
        app_id,
        str(state),
        src,
        out,
        "200",
        "--topology",
        "key_counts",
        "--guarantee",
        EOS,
        "--session-ms",
        "2000",
    ]
    # Kill at random points in the first, second and third quarter of the work.
    for round_, share in enumerate((0.0, 0.25, 0.5)):
        instance = Instance(f"killed-{round_}", args, tmp_path)
        try:
            target = int(total * (share + rng.uniform(0.05, 0.2)))
            wait_for(
                lambda target=target: committed_total() >= target,
                timeout=120,  # type: ignore[misc]
                what=f"{target} records to be committed",
            )
            time.sleep(rng.uniform(0.0, 0.2))
            instance.kill()  # SIGKILL: an open transaction, no checkpoint, no leaving the group
        finally:
            instance.ensure_dead()
        assert committed_total() < total, "the kill came after the end: lower the targets"
        # Running tasks keep no checkpoint: the next start cannot trust RocksDB, it wipes and restores it.
        assert checkpoints() == [], round_
    last = Instance("last", args, tmp_path)
    try:
        wait_for(lambda: committed_total() == total, timeout=120, what="every record to be committed")
        assert last.stop() == 0
        assert checkpoints() == [f"0_{p}" for p in range(PARTITIONS)]  # written by the clean close
    finally:
        last.ensure_dead()
    # The store, restored by a new instance from the checkpoint of the clean close, counts every input once.
    app = StreamsApp(
        key_counts(src, out), app_id, log_url, state_dir=state, processing_guarantee=EOS, session_timeout_ms=2000
    )
    with app:
        assert app.wait_until(lambda a: a.state == "RUNNING" and len(a.metrics()["tasks"]) == PARTITIONS, 60)
        assert dict(app.store("counts").all()) == dict(expected)
    if aborts_visible(log_url, request):
        pytest.skip(f"output check {skip_reason()}")
    by_key = outputs(log, out)
    counted = {k: [n for n, _ in seq] for k, seq in by_key.items()}
    assert {k: seq for k, seq in counted.items() if seq != list(range(1, expected[k] + 1))} == {}
    assert set(by_key) == set(expected)


# -- a zombie -----------------------------------------------------------------------------------------------


def test_a_zombie_cannot_commit_and_its_tasks_resume_without_duplicates(
    log_url: str, log: Log, names: Callable[[str], str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    group = Group(log, log_url, tmp_path, names, "eos-zombie")
    src, out, app_id, feed_ = group.src, group.out, group.app_id, group.feed

    def start(name: str) -> Instance:  # commits every second: a stop most likely lands mid-interval
        return Instance(
            name,
            [
                log_url,
                app_id,
                str(tmp_path / f"state-{name}"),
                src,
                out,
                "1000",
                "--topology",
                "key_counts",
                "--name",
                name,
                "--session-ms",
                "2000",
                "--guarantee",
                EOS,
            ],
            tmp_path,
        )

    a, b = start("a"), start("b")
    inputs = [TopicPartition(src, p) for p in range(len(TASKS))]
    try:
        wait_for(lambda: sorted(a.tasks() + b.tasks()) == TASKS and a.tasks() and b.tasks(), what="a and b to start")
        for _ in range(5):
            feed_.round()
        wait_for(all_committed(log, app_id, src, feed_), what="the first rounds to be committed")
        time.sleep(0.3)  # a's metrics line after its last record
        lost, before = set(a.tasks()), a.latest.get("processed", 0)
        mine = [key for key in KEYS if f"0_{partition_of(key)}" in lost]
        feed_.round()
        # Stopped once it processed the round, before it commits it (most likely): an open transaction
        # whose outputs and changelog records the new owner's fence must abort.
        wait_for(lambda: a.latest.get("processed", 0) >= before + len(mine), what="a to process the sixth round")
        a.pause(log_url)
        wait_for(lambda: b.tasks() == TASKS, what="b to take over the stopped instance's tasks")
        for _ in range(3):  # input the zombie has not seen: it will read it when it wakes up
            feed_.round()
        wait_for(all_committed(log, app_id, src, feed_), what="b to process and commit everything")
        committed = [log.committed(app_id, inputs)]
        generation = b.latest["generation"]
        a.signal(signal.SIGCONT)
        for _ in range(3):
            feed_.round()
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            committed.append(log.committed(app_id, inputs))
            time.sleep(0.1)
        # Its stream thread gives its lost tasks up without waiting on their transactions (the test broker does
        # not answer a zombie's EndTxn: an abort on the stream thread held it, and the group's rebalance, 30 s).
        wait_for(
            lambda: a.latest.get("generation", -1) > generation, timeout=15, what="the woken zombie to rejoin the group"
        )
        wait_for(all_committed(log, app_id, src, feed_), what="the last rounds to be committed")
        text = a.stderr_path.read_text()
        assert "fenced" in text or "expelled from the group" in text
        # The zombie's commit never landed: committed offsets only move forward.
        for earlier, later in itertools.pairwise(committed):
            assert all((later[tp] or 0) >= (earlier[tp] or 0) for tp in inputs), (earlier, later)
        for inst in (a, b):
            assert inst.stop() == 0
    finally:
        a.ensure_dead()
        b.ensure_dead()
    if aborts_visible(log_url, request):
        pytest.skip(f"output check {skip_reason()}")
    # Its open transaction was aborted: every key counts 1, 2, 3, ... with no repeat, and the keys of the
    # tasks it lost were counted on by b from where a's last commit left them.
    by_key = outputs(log, out)
    assert set(by_key) == set(feed_.sent)
    for key, seq in by_key.items():
        assert [n for n, _ in seq] == list(range(1, feed_.sent[key] + 1)), (key, seq)
        if f"0_{partition_of(key)}" in lost:
            assert "b" in {by for _, by in seq}, (key, seq)
