"""Windowed aggregation end to end, on SQLite and on the Kafka-protocol test broker: clicks keyed by page
in 4 partitions, counted per hopping window (10 s advancing by 5 s, 2 s grace) into a RocksDB window
store, one final count per window through ``suppress(until_window_closes())``.

- A clean restart (commit, close, start again) gives every window's final count exactly once.
- After ``kill -9``, at-least-once allows exactly this: a window's final count may be written again by
  the restarted instance if the killed one emitted it after its last commit (that input is processed
  again); it is never lost, and never written with another count. The suppression buffer and the window
  store are restored to the last commit (changelog records of uncommitted input are skipped), the stream
  time too, so a replayed window ends with the same count and an emitted one is not emitted again.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streams import Topology, WindowedSerdes
from streams.app import StreamsApp
from streams.changelog import BARRIER_KEY
from streams.errors import InvalidStateStoreError
from streams.log import Log, TopicPartition
from streams.suppress import SuppressProcessor
from streams.table_ops import TableOptions
from streams.topology import ProcessorNode
from tests.streams.instances import Instance
from tests.streams.topologies import CLICK_WINDOWS, click_windows, make_clicks, reference_window_counts
from tests.support.topics import create_topics, read_to_end, send_timestamped
from tests.support.waiting import wait_for

KEYS = WindowedSerdes.time_windowed(str, CLICK_WINDOWS.size_ms)
TICK_TS = 10**7  # far after the clicks: closes every window of every partition


class Produced:
    """Where the clicks went: each page's partition, and each partition's end (from the delivery reports:
    the test broker's end offsets are unreliable)."""

    def __init__(self) -> None:
        self.partition_of: dict[str, int] = {}
        self.ends = dict.fromkeys(range(4), 0)

    def delivered(self, key: str, md: Any) -> None:
        if md is not None:
            self.partition_of[key] = md.partition
            self.ends[md.partition] = max(self.ends[md.partition], md.offset + 1)


def produce_clicks(log: Log, topic: str, clicks: list[tuple[str, Any, int]], produced: Produced) -> None:
    with log.producer() as producer:
        send_timestamped(producer, topic, clicks, produced.delivered)


def feeding(log: Log, topic: str, clicks: list[tuple[str, Any, int]], produced: Produced) -> threading.Thread:
    """A started thread producing ``clicks`` 100 at a time, 30 ms apart: input still arriving when a test kills
    the instance. One producer for every chunk: a new Kafka producer delivers nothing for its first 0.5-1 s."""

    def feed() -> None:
        with log.producer() as producer:
            for i in range(0, len(clicks), 100):
                send_timestamped(producer, topic, clicks[i : i + 100], produced.delivered)
                time.sleep(0.03)

    feeder = threading.Thread(target=feed)
    feeder.start()
    return feeder


def produce_ticks(log: Log, topic: str, produced: Produced) -> None:
    """One late-in-time record per partition, so that stream time passes every window's close."""
    with log.producer() as producer:
        for partition in range(4):
            producer.send(
                topic,
                b"{}",
                b"~tick",
                partition=partition,
                timestamp=TICK_TS,
                on_delivery=lambda md, err: produced.delivered("~tick", md),
            )
        producer.flush()


def finals(log: Log, topic: str, quiet: float = 0.5) -> dict[tuple[str, int], list[int]]:
    """Every final count written, per (page, window start), in the order written."""
    out: dict[tuple[str, int], list[int]] = defaultdict(list)
    for r in sorted(read_to_end(log, topic, quiet=quiet), key=lambda r: (r.partition, r.offset)):
        w = KEYS.deserialize(r.key, topic, True)
        out[(w.key, w.window.start)].append(int.from_bytes(r.value, "big"))
    return dict(out)


def closed_by(
    ref: dict[tuple[str, int], int], stream_time: dict[int, int], where: dict[str, int]
) -> dict[tuple[str, int], int]:
    """The windows whose close (end + grace) the partition's stream time has reached."""
    return {
        (page, start): n
        for (page, start), n in ref.items()
        if CLICK_WINDOWS.closes_at(start + CLICK_WINDOWS.size_ms) <= stream_time[where[page]]
    }


def all_committed(log: Log, app_id: str, topic: str, produced: Produced) -> bool:
    committed = log.committed(app_id, [TopicPartition(topic, p) for p in range(4)])
    return all((committed[TopicPartition(topic, p)] or 0) == produced.ends[p] for p in range(4))


def test_hopping_count_with_final_results_across_a_clean_restart(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    clicks_topic, finals_topic, app_id = names("clicks"), names("click-finals"), names("windows")
    create_topics(log, 4, clicks_topic, finals_topic)
    produced = Produced()
    where = produced.partition_of
    first = make_clicks(1200, start_ms=1_000)  # librdkafka sends a timestamp of 0 as "now"
    produce_clicks(log, clicks_topic, first, produced)
    state = tmp_path / "state"

    def app() -> StreamsApp:
        return StreamsApp(
            click_windows(clicks_topic, finals_topic), app_id, log_url, state_dir=state, commit_interval_ms=200
        )

    with app() as a:
        wait_for(lambda: all_committed(log, app_id, clicks_topic, produced), what="the first clicks to be committed")
        # The window store holds each page's windows within the retention (size + grace) of the newest
        # window start in its partition.
        ref = reference_window_counts(first)
        newest: dict[int, int] = defaultdict(int)
        for page, _, ts in first:
            newest[where[page]] = max(newest[where[page]], ts - ts % CLICK_WINDOWS.advance_ms)
        store = a.store("clicks-per-window")
        retention = CLICK_WINDOWS.default_retention_ms
        for page in {p for p, _, _ in first}:
            retained = sorted((s, n) for (p, s), n in ref.items() if p == page and s > newest[where[page]] - retention)
            wait_for(
                lambda page=page, retained=retained: store.fetch(page, 0, 10**9) == retained,  # type: ignore[misc]
                what=f"the window store to hold {page}'s windows",
            )
        stream_time = {p: max(ts for page, _, ts in first if where[page] == p) for p in range(4)}
        expected_so_far = closed_by(ref, stream_time, where)
        wait_for(
            lambda: finals(log, finals_topic) == {k: [n] for k, n in expected_so_far.items()},
            what="the final counts of the windows closed so far",
        )

    second = make_clicks(1200, start_ms=24_000)  # overlaps the last open windows of the first batch
    produce_clicks(log, clicks_topic, second, produced)
    produce_ticks(log, clicks_topic, produced)
    expected = {k: [n] for k, n in reference_window_counts(first + second).items()}
    with app() as b:
        wait_for(lambda: all_committed(log, app_id, clicks_topic, produced), what="the second clicks to be committed")
        wait_for(lambda: finals(log, finals_topic) == expected, what="every window's final count, once")
        assert b.metrics()["dropped_records"] == 0
    # Windowed changelogs are compacted and deleted: retention = the store's (size + grace) + 1 day.
    changelog = log.describe_topic(f"{app_id}-clicks-per-window-changelog")
    assert changelog is not None and changelog.partitions == 4
    assert changelog.config["cleanup.policy"] == "compact,delete"
    assert changelog.config["retention.ms"] == str(12_000 + 86_400_000)
    buffer = log.describe_topic(f"{app_id}-finals-store-changelog")
    assert buffer is not None and buffer.compacted and buffer.config["cleanup.policy"] == "compact"


@pytest.mark.slow
def test_suppressed_finals_after_kill_9(
    kill_log: Log, kill_log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    log, log_url = kill_log, kill_log_url
    clicks_topic, finals_topic, app_id = names("clicks"), names("click-finals"), names("windows-kill")
    create_topics(log, 4, clicks_topic, finals_topic)
    produced = Produced()
    state = tmp_path / "state"
    # Uncached, so that finals are emitted as records arrive, and the killed instance commits every
    # second: the kill usually lands after it emitted finals it had not committed (then they are written
    # twice). With the cache, finals reach the output only at commits, just before the offsets.
    # A 2 s session (the suite's): on SQLite the restart waits out the killed instance's session.
    args = [log_url, app_id, str(state), clicks_topic, finals_topic, "1000", "--topology", "click_windows_uncached"]
    args += ["--session-ms", "2000"]
    first = make_clicks(1500, start_ms=1_000)
    second = make_clicks(3000, start_ms=30_000)
    produce_clicks(log, clicks_topic, first, produced)
    instance = Instance("killed", args, tmp_path)
    try:
        wait_for(lambda: all_committed(log, app_id, clicks_topic, produced), what="the first clicks to be committed")
        emitted_before = sum(len(v) for v in finals(log, finals_topic).values())
        assert emitted_before > 0

        feeder = feeding(log, clicks_topic, second, produced)
        time.sleep(0.6)
        instance.proc.kill()  # SIGKILL: no commit, no flush of the caches, no checkpoint
        instance.proc.wait()
        feeder.join()
    finally:
        if instance.proc.poll() is None:
            instance.proc.kill()
            instance.proc.wait()
        instance.stderr.close()
    produce_ticks(log, clicks_topic, produced)
    expected = reference_window_counts(first + second)
    args[5] = "200"
    restarted = Instance("restarted", args, tmp_path)
    try:
        wait_for(
            lambda: all_committed(log, app_id, clicks_topic, produced), timeout=120, what="all clicks to be committed"
        )
        wait_for(
            lambda: set(finals(log, finals_topic)) == set(expected), timeout=120, what="a final count of every window"
        )
        assert restarted.stop() == 0
    finally:
        if restarted.proc.poll() is None:
            restarted.proc.kill()
            restarted.proc.wait()
    written = finals(log, finals_topic, quiet=1.0)
    assert set(written) == set(expected)  # none lost, none made up
    wrong = {k: v for k, v in written.items() if set(v) != {expected[k]}}
    assert wrong == {}  # a window written twice has the same count both times
    assert all(len(v) <= 2 for v in written.values())


@pytest.mark.slow
def test_window_store_restored_after_kill_9_equals_a_clean_run(
    kill_log: Log, kill_log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    """Hopping windows log a key's windows by block (``streams/state/timed.py``): killed mid-run, restarted (which
    restores from that changelog, no checkpoint being left) and run to the end, the changelog restores into a
    fresh state directory exactly the windows a clean run keeps, with a clean run's counts."""
    log, log_url = kill_log, kill_log_url
    clicks_topic, finals_topic, app_id = names("clicks"), names("click-finals"), names("windows-restore")
    create_topics(log, 4, clicks_topic, finals_topic)
    produced = Produced()
    first = make_clicks(1500, start_ms=1_000)
    second = make_clicks(3000, start_ms=30_000)
    produce_clicks(log, clicks_topic, first, produced)
    args = [log_url, app_id, str(tmp_path / "state"), clicks_topic, finals_topic, "500", "--topology", "click_windows"]
    args += ["--session-ms", "2000"]  # the suite's: on SQLite the restart waits out the killed instance's session
    instance = Instance("killed", args, tmp_path)
    try:
        wait_for(lambda: all_committed(log, app_id, clicks_topic, produced), what="the first clicks to be committed")

        feeder = feeding(log, clicks_topic, second, produced)
        time.sleep(0.6)
        instance.kill()  # SIGKILL mid-run: no commit, no flush of the caches, no checkpoint
        feeder.join()
    finally:
        instance.ensure_dead()
        instance.stderr.close()
    restarted = Instance("restarted", args, tmp_path)
    try:
        wait_for(
            lambda: all_committed(log, app_id, clicks_topic, produced), timeout=120, what="all clicks to be committed"
        )
        assert restarted.stop() == 0
    finally:
        restarted.ensure_dead()
    # A clean run keeps, per page, the windows within the retention of its partition's newest window start.
    clicks = first + second
    where = produced.partition_of
    newest: dict[int, int] = defaultdict(int)
    for page, _, ts in clicks:
        newest[where[page]] = max(newest[where[page]], ts - ts % CLICK_WINDOWS.advance_ms)
    retention = CLICK_WINDOWS.default_retention_ms
    clean = {
        (page, start): n
        for (page, start), n in reference_window_counts(clicks).items()
        if start > newest[where[page]] - retention
    }
    app = StreamsApp(click_windows(clicks_topic, finals_topic), app_id, log_url, state_dir=tmp_path / "fresh")
    with app:
        store = app.store("clicks-per-window")

        def restored() -> dict[tuple[str, int], int] | None:
            try:
                pages = {p for p, _, _ in clicks}
                return {(page, start): n for page in pages for start, n in store.fetch(page, 0, 10**9)}
            except InvalidStateStoreError:
                return None  # its task is still restoring

        wait_for(lambda: restored() == clean, timeout=60, what="the restored window store to equal a clean run's")
        assert app.metrics()["dropped_records"] == 0


def _logged_buffer(log: Log, app_id: str) -> list[Any]:
    """The suppression buffer's changelog records (restore barriers left out)."""
    return [r for r in read_to_end(log, f"{app_id}-finals-store-changelog", quiet=0.3) if r.key != BARRIER_KEY]


def _buffer_logged_by_itself(topology: Topology) -> Topology:
    """``topology`` with its suppression as it was before final results were derived from the window store: the
    buffer logs every update to its changelog and no suppression time is kept with the window store."""
    node = topology.nodes["finals"]
    assert isinstance(node, ProcessorNode) and node.supplier is not None
    derived = node.supplier()
    assert isinstance(derived, SuppressProcessor) and derived.window_store == "clicks-per-window"
    node.supplier = lambda: SuppressProcessor(
        derived.store_name, derived.suppressed, CLICK_WINDOWS.grace_ms, TableOptions()
    )
    return topology


@pytest.mark.parametrize("before", ["derived", "buffer logged"])
def test_final_results_after_a_restore_into_a_fresh_state_directory(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path, before: str
) -> None:
    """Final results below a hopping count derive their buffer from the window store: the buffer logs nothing,
    and a restore from the changelogs alone (a fresh state directory) rebuilds it, so each window's final
    count is written once. ``buffer logged``: the first run logged the buffer (as before this layout); the
    second, deriving, restores the buffer from that changelog once."""
    clicks_topic, finals_topic, app_id = names("clicks"), names("click-finals"), names("windows-fresh")
    create_topics(log, 4, clicks_topic, finals_topic)
    produced = Produced()
    first = make_clicks(1200, start_ms=1_000)
    produce_clicks(log, clicks_topic, first, produced)
    topology = click_windows(clicks_topic, finals_topic)
    if before == "buffer logged":
        topology = _buffer_logged_by_itself(topology)
    with StreamsApp(topology, app_id, log_url, state_dir=tmp_path / "first", commit_interval_ms=200):
        wait_for(lambda: all_committed(log, app_id, clicks_topic, produced), what="the first clicks to be committed")
        wait_for(lambda: len(finals(log, finals_topic)) > 0, what="the first final counts")
    assert (_logged_buffer(log, app_id) == []) == (before == "derived")
    # Later than every window of the first run: the windows it left open get no update in the second, only
    # the rebuilt buffer emits them.
    second = make_clicks(1200, start_ms=40_000)
    produce_clicks(log, clicks_topic, second, produced)
    produce_ticks(log, clicks_topic, produced)
    expected = {k: [n] for k, n in reference_window_counts(first + second).items()}
    app = StreamsApp(
        click_windows(clicks_topic, finals_topic), app_id, log_url, state_dir=tmp_path / "fresh", commit_interval_ms=200
    )
    with app:
        wait_for(lambda: all_committed(log, app_id, clicks_topic, produced), what="the second clicks to be committed")
        wait_for(lambda: finals(log, finals_topic) == expected, what="every window's final count, once")
    if before == "derived":
        assert _logged_buffer(log, app_id) == []
