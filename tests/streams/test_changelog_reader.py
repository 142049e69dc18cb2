"""The changelog reader reports every store's restore to its ``RestoreListener``."""

from __future__ import annotations

from pathlib import Path

from streams.changelog import ChangelogReader, RestoreJob
from streams.log import Log, TopicPartition, open_log
from streams.processor import RecordContext
from streams.record_serdes import STRING
from streams.state.memory import InMemoryKeyValueStore


class Recorder:
    """A RestoreListener that keeps what it heard."""

    def __init__(self) -> None:
        self.starts: list[tuple[str, str, TopicPartition, int, int]] = []
        self.batches: list[tuple[str, str, int, int]] = []
        self.ends: list[tuple[str, str, int]] = []

    def on_restore_start(
        self, task_id: str, store: str, changelog: TopicPartition, start_offset: int, end_offset: int
    ) -> None:
        self.starts.append((task_id, store, changelog, start_offset, end_offset))

    def on_batch_restored(
        self, task_id: str, store: str, changelog: TopicPartition, batch_end_offset: int, num_restored: int
    ) -> None:
        self.batches.append((task_id, store, batch_end_offset, num_restored))

    def on_restore_end(self, task_id: str, store: str, changelog: TopicPartition, total_restored: int) -> None:
        self.ends.append((task_id, store, total_restored))


def _store(lg: Log, name: str) -> tuple[InMemoryKeyValueStore, TopicPartition]:
    topic = f"app-{name}-changelog"
    lg.create_topic(topic, 1, compacted=True)
    return InMemoryKeyValueStore(name, STRING, STRING, topic, RecordContext()), TopicPartition(topic, 0)


def test_reader_reports_start_batches_and_end_of_every_store(tmp_path: Path) -> None:
    with open_log(f"sqlite:///{tmp_path / 'log'}") as lg:
        full, full_tp = _store(lg, "full")
        empty, empty_tp = _store(lg, "empty")
        with lg.producer() as producer:
            for i in range(3):
                producer.send(full_tp.topic, f"v{i}".encode(), f"k{i}".encode(), partition=0)
            producer.flush()
            recorder = Recorder()
            reader = ChangelogReader(producer, lambda: lg.consumer(None, client_id="restore"), recorder)
            reader.restore([RestoreJob("0_0", full, full_tp, 0, {}), RestoreJob("0_0", empty, empty_tp, 0, {})])
            reader.close()

    # The barrier lands after the three records (offset 3) and as the first record of the empty changelog.
    assert recorder.starts == [("0_0", "full", full_tp, 0, 3), ("0_0", "empty", empty_tp, 0, 0)]
    assert sum(n for *_, n in recorder.batches) == 3
    assert {(task, store) for task, store, _, _ in recorder.batches} == {("0_0", "full")}
    assert recorder.batches[-1][2] == 2  # the offset of the last record applied
    assert recorder.ends == [("0_0", "full", 3), ("0_0", "empty", 0)]
    assert dict(full.all()) == {"k0": "v0", "k1": "v1", "k2": "v2"}
    assert reader.restore_seconds > 0
