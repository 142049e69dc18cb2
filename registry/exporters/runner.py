"""One running exporter: it follows ``_schemas`` from its stored offset and repeats at the destination what each
record did at the source, then stores how far it got.

Record by record (``_export``), in log order:

==================================  =============================================================================
``_schemas`` record                 at the destination (IMPORT mode, the subject renamed by the exporter)
==================================  =============================================================================
SCHEMA                              registered with the source's id and version (a soft-deleted one: registered,
                                    then soft-deleted, so its id stays readable as at the source)
SCHEMA tombstone                    the version deleted permanently
DELETE_SUBJECT / CLEAR_SUBJECT      the subject soft-deleted / deleted permanently
CONFIG / its tombstone              the subject's (or the context's) config set / deleted
MODE                                set, READWRITE as IMPORT: the destination keeps taking the exporter's writes
everything else                     nothing (NOOP, CONTEXT, exporter records, mode tombstones)
==================================  =============================================================================

Nothing is written twice. After a start (a failover, a resume, a reset) the records up to the log's end at that
moment may have been exported already by whoever ran the exporter before, so for those the destination is asked
first, and a version it holds with the same id, or a config or mode it has already, is skipped; later records are
new by construction. Deletes of what
is gone count as done. A destination that fails puts the exporter in ERROR with the reason (``trace``); the same
record is retried, waiting up to ``retry_max`` seconds between tries, and the exporter is RUNNING again at the
first success. Registrations of different subjects that follow each other in the log (without references) are
sent together, up to ``parallel`` at a time: the order that matters is a subject's own (and a referenced
subject before its referrer), and the destination's latency, not its work, bounds an exporter that waits for
each answer. Progress (the offset of the last record done) is stored at most every ``commit_interval`` seconds
and when the exporter has caught up, through ``commit``.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from registry import schemas_topic
from registry.exporters.definition import ExporterDefinition, SubjectMapping
from registry.exporters.destination import ConfigError, Destination, DestinationError
from registry.modes import Mode
from registry.schemas_topic import RecordFormatError, decode_key, decode_value
from registry.store import Store
from streams.log import LogError, Record, TopicPartition

log = logging.getLogger("registry.exporters")


class ExporterState(enum.StrEnum):
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    ERROR = "ERROR"


#: ``commit(offset, timestamp)``: store the exporter's progress; the offset of the record that stored it
Commit = Callable[[int, int], Awaitable[int | None]]


class ExporterRunner:
    def __init__(
        self,
        definition: ExporterDefinition,
        store: Store,
        offset: int,
        commit: Commit,
        *,
        batch: int = 500,
        commit_interval: float = 1.0,
        retry_max: float = 2.0,
        parallel: int = 16,
    ) -> None:
        self.definition = definition
        self.mapping = SubjectMapping(definition)
        self.store = store
        #: offset of the last ``_schemas`` record done (-1: none yet)
        self.position = offset
        #: timestamp (ms) of that record (0: unknown)
        self.position_ts = 0
        self.committed = offset
        self.state = ExporterState.STARTING
        #: the last failure and when it happened (ms since the epoch); kept after recovering
        self.last_error: str | None = None
        self.last_error_ts: int | None = None
        self.exported = 0  # records that changed something at the destination (or would have)
        self.errors = 0
        #: timestamp (ms) of the oldest record not yet exported, while one is known
        self.pending_ts: int | None = None
        self._commit = commit
        self._batch = batch
        self._commit_interval = commit_interval
        self._retry_max = retry_max
        self._parallel = parallel
        self._last_commit = time.monotonic()
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.definition.name

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"exporter-{self.name}")

    async def stop(self) -> None:
        """Stop at once (the record in flight is exported again by the next run, which checks first)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _set_state(self, state: ExporterState, reason: str | None = None) -> None:
        if state is self.state:
            return
        previous, self.state = self.state, state
        if state is ExporterState.ERROR:
            log.warning(
                "exporter %s: %s -> %s at offset %d: %s",
                self.name,
                previous,
                state,
                self.position,
                reason,
                extra={"exporter": self.name},
            )
        else:
            log.info("exporter %s: %s -> %s at offset %d", self.name, previous, state, self.position)

    def _failed(self, reason: str) -> None:
        self.errors += 1
        self.last_error = reason
        self.last_error_ts = int(time.time() * 1000)
        self._set_state(ExporterState.ERROR, reason)

    # ---- the loop ----------------------------------------------------------------------------------------

    async def _run(self) -> None:
        log.info("exporter %s: starting at offset %d", self.name, self.position + 1)
        destination: Destination | None = None
        consumer = None
        retry = 0.25
        while destination is None:  # settings that cannot be used (a TLS file gone) wait in ERROR
            try:
                destination = Destination(self.definition.config)
            except ConfigError as e:
                self._failed(f"exporter config: {e}")
                await asyncio.sleep(retry)
                retry = min(self._retry_max, retry * 2)
        try:
            consumer = self.store.log.consumer(None, client_id=f"schemakit-exporter-{self.name}")
            consumer.assign({TopicPartition(self.store.topic, 0): self.position + 1})
            # what a previous run may have exported already: looked up before it is written again
            look_until = self.store.state.offset
            while True:
                batch = await asyncio.to_thread(consumer.poll, 0.5, self._batch)
                if self.state is ExporterState.STARTING:
                    self._set_state(ExporterState.RUNNING)
                for group in _groups([r for r in batch if r.offset > self.position], self._parallel):
                    self.pending_ts = group[0].timestamp
                    done = await asyncio.gather(
                        *(self._export_retrying(destination, r, look_first=r.offset <= look_until) for r in group)
                    )
                    self.exported += sum(done)
                    self.position, self.position_ts = group[-1].offset, group[-1].timestamp
                    await self._maybe_commit(caught_up=False)
                if self.position >= self.store.state.offset:
                    self.pending_ts = None
                await self._maybe_commit(caught_up=not batch)
        finally:
            if consumer is not None:
                consumer.close()
            await destination.aclose()

    async def _maybe_commit(self, *, caught_up: bool) -> None:
        if self.position <= self.committed:
            return
        if not caught_up and time.monotonic() - self._last_commit < self._commit_interval:
            return
        try:
            stored_at = await self._commit(self.position, self.position_ts)
        except Exception as e:  # not the leader any more, or the log failing: the next run starts earlier
            log.warning("exporter %s: storing its offset %d failed: %s", self.name, self.position, e)
            return
        self.committed = self.position
        self._last_commit = time.monotonic()
        if stored_at == self.position + 1:  # its own record, right after: nothing to export there, no lag
            self.position = self.committed = stored_at

    async def _export_retrying(self, destination: Destination, record: Record, *, look_first: bool) -> bool:
        retry = 0.25
        while True:
            try:
                done = await self._export(destination, record, look_first=look_first)
            except (DestinationError, httpx.HTTPError, LogError, ValueError, KeyError, TypeError) as e:
                self._failed(f"offset {record.offset}: {e}")
                await asyncio.sleep(retry)
                retry = min(self._retry_max, retry * 2)
                look_first = True  # the failed call may have been done
                continue
            self._set_state(ExporterState.RUNNING)
            return done

    async def _export(self, d: Destination, record: Record, *, look_first: bool) -> bool:
        """Repeat one record at the destination; False when it is not for this exporter."""
        if record.key is None:
            return False
        try:
            key = decode_key(record.key)
            value = decode_value(record.value)
        except RecordFormatError:
            return False  # State.apply skipped it too
        kt, m = key.keytype, self.mapping
        if kt in (schemas_topic.SCHEMA, schemas_topic.DELETE_SUBJECT, schemas_topic.CLEAR_SUBJECT):
            if key.subject is None or not m.covers(key.subject):
                return False
            target = m.subject(key.subject)
            if kt == schemas_topic.DELETE_SUBJECT:
                if value is not None:
                    await d.delete_subject(target, permanent=False)
            elif kt == schemas_topic.CLEAR_SUBJECT:
                if value is not None:
                    await d.delete_subject(target, permanent=True)
            elif value is None:
                await d.delete_version(target, key.version or 0, permanent=True)
            else:
                version = key.version or int(value["version"])
                await self._export_schema(d, key.subject, target, version, value, look_first)
            return True
        if kt in (schemas_topic.CONFIG, schemas_topic.MODE):
            covered = m.covers_context(".") if key.subject is None else m.covers(key.subject)
            if not covered:
                return False
            settings_target = m.settings_subject(key.subject)
            if kt == schemas_topic.CONFIG:
                if value is None:
                    await d.delete_config(settings_target)
                else:
                    await d.put_config(settings_target, value, look_first=look_first)
                return True
            mode = str((value or {}).get("mode", ""))
            if value is None or settings_target is None or mode == Mode.FORWARD:
                return False  # the destination stays in IMPORT for the subjects it takes
            await d.put_mode(settings_target, Mode.IMPORT if mode == Mode.READWRITE else mode, look_first=look_first)
            return True
        return False

    async def _export_schema(
        self, d: Destination, source: str, target: str, version: int, value: dict[str, Any], look_first: bool
    ) -> None:
        body: dict[str, Any] = {
            "schema": value["schema"],
            "schemaType": value.get("schemaType") or "AVRO",
            "references": self.mapping.references(source, value.get("references") or ()),
        }
        for field in ("metadata", "ruleSet"):
            if value.get(field):
                body[field] = value[field]
        deleted = bool(value.get("deleted"))
        await d.import_schema(target, version, int(value["id"]), body, look_first=look_first or deleted)
        if deleted:
            await d.delete_version(target, version, permanent=False)

    # ---- what /status shows ------------------------------------------------------------------------------

    def lag(self, now_ms: int) -> tuple[int, float]:
        """(records of ``_schemas`` not yet done, seconds the oldest of them has waited: 0 when none)."""
        records = max(0, self.store.state.offset - self.position)
        if records == 0:
            return 0, 0.0
        since = self.pending_ts
        if since is None:
            return records, 0.0
        return records, max(0.0, (now_ms - since) / 1000)


def _groups(records: list[Record], limit: int) -> list[list[Record]]:
    """``records`` in order, cut into groups that may be exported at the same time: consecutive registrations
    (SCHEMA records, not deletes, without references) of distinct subjects, at most ``limit`` of them; every
    other record is a group of its own, after the records before it and before those after it."""
    groups: list[list[Record]] = []
    subjects: set[bytes] = set()
    for record in records:
        subject = _parallel_subject(record)
        current = groups[-1] if groups else None
        if (
            subject is not None
            and current is not None
            and subjects
            and subject not in subjects
            and len(current) < limit
        ):
            current.append(record)
            subjects.add(subject)
            continue
        groups.append([record])
        subjects = {subject} if subject is not None else set()
    return groups


def _parallel_subject(record: Record) -> bytes | None:
    """The subject of a record that may go with others (a registration without references); None otherwise."""
    if record.key is None or record.value is None:
        return None
    try:
        key, value = decode_key(record.key), decode_value(record.value)
    except RecordFormatError:
        return None
    if key.keytype != schemas_topic.SCHEMA or value is None or value.get("deleted") or value.get("references"):
        return None
    return (key.subject or "").encode()
