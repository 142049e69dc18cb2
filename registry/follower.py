"""Following one partition of the log in a thread of its own, for as long as the registry runs.

The registry follows two topics this way: ``_schemas`` (the store's reader) and the election topic (who
leads). A follower never dies silently: a failing poll is logged (with its traceback when it is not the
log's own error) and retried after a pause that grows with each failure, and after ``REOPEN_AFTER``
failures in a row it starts over on a new consumer from where it was, since the old one may be what is
broken. ``failure`` says why it cannot read right now (None while it can): the store turns it into
readiness and into refused writes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from streams.log import Consumer, Log, LogError, Record, TopicPartition

log = logging.getLogger(__name__)

#: consecutive failed polls after which a follower replaces its consumer
REOPEN_AFTER = 3
#: the longest pause between two failed polls, in seconds
MAX_RETRY_PAUSE = 5.0

#: handed each batch, in the follower's thread; returns False to stop following (e.g. its loop is gone)
BatchHandler = Callable[[list[Record]], bool]


class PartitionFollower:
    def __init__(
        self,
        log_backend: Log,
        tp: TopicPartition,
        on_batch: BatchHandler,
        *,
        consumer: Consumer,
        offset: int,
        client_id: str,
        max_records: int = 1000,
    ) -> None:
        """Follow ``tp`` with ``consumer``, which is positioned at ``offset`` (the next offset to read);
        a replacement consumer is created with ``client_id``."""
        self.log = log_backend
        self.tp = tp
        self.next_offset = offset
        #: why the follower cannot read right now; None while it can
        self.failure: str | None = None
        self._on_batch = on_batch
        self._consumer = consumer
        self._client_id = client_id
        self._max_records = max_records
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, name: str) -> None:
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        try:
            self._consumer.close()
        except Exception as e:
            log.debug("closing the consumer of %s: %s", self.tp.topic, e)

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                if failures >= REOPEN_AFTER:
                    self._reopen()
                batch = self._consumer.poll(0.2, self._max_records)
            except Exception as e:
                failures += 1
                self.failure = f"reading {self.tp.topic} failed: {e}"
                doing = f"reading {self.tp.topic} (attempt {failures})"
                if isinstance(e, LogError):
                    log.error("%s failed: %s; retrying", doing, e)
                else:
                    log.exception("%s failed unexpectedly; retrying", doing)
                self._stop.wait(min(0.5 * failures, MAX_RETRY_PAUSE))
                continue
            if failures:
                log.info("reading %s again after %d failed attempts", self.tp.topic, failures)
                failures = 0
                self.failure = None
            if batch:
                self.next_offset = batch[-1].offset + 1
                try:
                    if not self._on_batch(batch):
                        return
                except Exception:  # the handler's bug must not stop the following either
                    first, last = batch[0].offset, batch[-1].offset
                    log.exception("handling records %d-%d of %s failed", first, last, self.tp.topic)

    def _reopen(self) -> None:
        old = self._consumer
        try:
            old.close()
        except Exception as e:
            log.debug("closing the failed consumer of %s: %s", self.tp.topic, e)
        consumer = self.log.consumer(None, client_id=self._client_id)
        consumer.assign({self.tp: self.next_offset})
        self._consumer = consumer
        log.info("reading %s with a new consumer from offset %d", self.tp.topic, self.next_offset)
