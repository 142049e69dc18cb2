"""The exporters of one registry instance: Confluent's ``/exporters`` operations, and the exporters that run.

**Stored in ``_schemas``.** An exporter's definition is an ``EXPORTER`` record and its state (paused or not,
how far it got) an ``EXPORTER_STATE`` record, both keyed by the exporter's name, written through the store like
every other write (the leader's fenced appender where instances elect one) and applied by ``State``, so every
instance knows every exporter and a new leader finds each one's offset where the old one stored it. Confluent
keeps exporters in a topic of their own (``_exporters``); here the registry's one log, one reader and one
fenced writer already give replication, ordering and failover, and a second topic would need all three again.

**Run on the leader only.** A supervisor loop (every ``interval`` seconds) starts a runner
(``runner.py``) for each exporter that is not paused while this instance leads and its store reads the log,
and stops every runner when it does not lead any more (or the exporter was paused, changed or deleted).
Writes that change an exporter are ``@leader_only`` routes, so they run here, beside the runners.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from registry import errors, schemas_topic
from registry.exporters.definition import ExporterDefinition
from registry.exporters.destination import ConfigError, client_options
from registry.exporters.runner import ExporterRunner, ExporterState
from registry.metrics import ExporterFigures
from registry.schemas_topic import Key, jdumps
from registry.store import Store

log = logging.getLogger("registry.exporters")

#: at most this many exporters (40964 past it)
MAX_EXPORTERS = 100


@dataclass(frozen=True, slots=True)
class StoredState:
    """An EXPORTER_STATE record's value: paused or not, and the offset of the last ``_schemas`` record done."""

    paused: bool = False
    offset: int = -1
    ts: int = 0

    @classmethod
    def of(cls, value: dict[str, Any] | None) -> StoredState:
        value = value or {}
        return cls(bool(value.get("paused")), int(value.get("offset", -1)), int(value.get("ts") or 0))

    def encode(self) -> bytes:
        return jdumps({"paused": self.paused, "offset": self.offset, "ts": self.ts}).encode()


class ExporterManager:
    def __init__(
        self,
        store: Store,
        *,
        is_leader: Callable[[], bool] | None = None,
        source_id: str = "schema-registry",
        interval: float = 0.5,
        runner_options: dict[str, Any] | None = None,
    ) -> None:
        """``is_leader``: does this instance lead now (None: it is the log's only writer); ``source_id``: the
        name of AUTO's destination context."""
        self.store = store
        self.is_leader = is_leader or (lambda: True)
        self.source_id = source_id
        self.interval = interval
        self.runner_options = runner_options or {}
        self.runners: dict[str, ExporterRunner] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._behind_since: dict[str, float] = {}
        self._supervisor: asyncio.Task[None] | None = None
        self._caught_up = False

    # ---- reading ---------------------------------------------------------------------------------------

    def names(self) -> list[str]:
        return sorted(self.store.state.exporters)

    def get(self, name: str) -> ExporterDefinition:
        value = self.store.state.exporters.get(name)
        if value is None:
            raise errors.exporter_not_found(name)
        return ExporterDefinition.from_stored(value, self.source_id)

    def stored_state(self, name: str) -> StoredState:
        return StoredState.of(self.store.state.exporter_states.get(name))

    def status(self, name: str) -> dict[str, Any]:
        """Confluent's ``ExporterStatus`` (name, state, offset, ts, trace) and what Confluent's lacks: the lag in
        records and seconds, the last error and when it happened, and the counts since this instance led."""
        self.get(name)
        figures = self._figures(name)
        runner = self.runners.get(name)
        stored = self.stored_state(name)
        offset = runner.position if runner is not None else stored.offset
        ts = (runner.position_ts or stored.ts) if runner is not None else stored.ts
        return {
            "name": name,
            "state": figures.state,
            "offset": offset,
            "ts": ts,
            "trace": runner.last_error if runner is not None and runner.state is ExporterState.ERROR else None,
            "lagRecords": figures.lag_records,
            "lagSeconds": round(figures.lag_seconds, 3),
            "lastError": runner.last_error if runner is not None else None,
            "lastErrorTs": runner.last_error_ts if runner is not None else None,
            "recordsExported": figures.exported,
            "errors": figures.errors,
        }

    def _figures(self, name: str) -> ExporterFigures:
        runner = self.runners.get(name)
        now = time.time()
        if runner is not None:
            state = runner.state
            records, seconds = runner.lag(int(now * 1000))
        else:
            stored = self.stored_state(name)
            state = ExporterState.PAUSED if stored.paused else ExporterState.STARTING
            records, seconds = max(0, self.store.state.offset - stored.offset), 0.0
        if records == 0:
            self._behind_since.pop(name, None)
        elif seconds == 0.0:  # behind, and the oldest waiting record not read yet: since first seen behind
            seconds = now - self._behind_since.setdefault(name, now)
        return ExporterFigures(
            name=name,
            state=str(state),
            exported=runner.exported if runner is not None else 0,
            errors=runner.errors if runner is not None else 0,
            lag_records=records,
            lag_seconds=seconds,
        )

    def figures(self) -> list[ExporterFigures]:
        """Every exporter's figures, for the metrics (``registry/metrics.py``): the leader's only, where they run
        (a follower would report every exporter as not started)."""
        if not self.is_leader():
            return []
        return [self._figures(name) for name in self.names()]

    # ---- changing ---------------------------------------------------------------------------------------

    def _lock(self, name: str) -> asyncio.Lock:
        return self._locks.setdefault(name, asyncio.Lock())

    async def _write(self, keytype: str, name: str, value: bytes | None) -> int:
        """Write an exporter record; its offset in ``_schemas``."""
        if not self._caught_up:  # as the service: read everything written before the first write
            await self.store.barrier()
            self._caught_up = True
        return await self.store.write(Key(keytype, name=name).encode(), value, "Exporter")

    async def _write_state(self, name: str, state: StoredState) -> int:
        return await self._write(schemas_topic.EXPORTER_STATE, name, state.encode())

    @staticmethod
    def _check_client(definition: ExporterDefinition) -> None:
        try:
            client_options(definition.config)
        except ConfigError as e:
            raise errors.invalid_exporter_config(f"Missing or invalid exporter config: {e}") from None

    async def create(self, definition: ExporterDefinition) -> None:
        definition.check()
        self._check_client(definition)
        async with self._lock(definition.name):
            await self.store.barrier()
            if definition.name in self.store.state.exporters:
                raise errors.exporter_already_exists(definition.name)
            if len(self.store.state.exporters) >= MAX_EXPORTERS:
                raise errors.too_many_exporters(MAX_EXPORTERS)
            await self._write_state(definition.name, StoredState())
            await self._write(schemas_topic.EXPORTER, definition.name, jdumps(definition.stored()).encode())
        log.info("exporter %s: created (%s)", definition.name, _describe(definition))

    async def update(self, name: str, changes: dict[str, Any]) -> ExporterDefinition:
        """Change a paused exporter's definition (40963 when it is not paused, as Confluent)."""
        async with self._lock(name):
            updated = self.get(name).updated(changes)
            self._check_client(updated)
            if not self.stored_state(name).paused:
                raise errors.exporter_not_paused(name)
            await self._write(schemas_topic.EXPORTER, name, jdumps(updated.stored()).encode())
        log.info("exporter %s: updated (%s)", name, _describe(updated))
        return updated

    async def delete(self, name: str) -> None:
        async with self._lock(name):
            self.get(name)
            await self._stop(name)
            await self._write(schemas_topic.EXPORTER, name, None)
            await self._write(schemas_topic.EXPORTER_STATE, name, None)
        log.info("exporter %s: deleted", name)

    async def pause(self, name: str) -> None:
        async with self._lock(name):
            self.get(name)
            runner = await self._stop(name)
            stored = self.stored_state(name)
            offset = runner.position if runner is not None else stored.offset
            ts = runner.position_ts if runner is not None else stored.ts
            await self._write_state(name, StoredState(True, offset, ts))
        log.info("exporter %s: -> PAUSED at offset %d", name, offset)

    async def resume(self, name: str) -> None:
        async with self._lock(name):
            self.get(name)
            stored = self.stored_state(name)
            if not stored.paused:
                raise errors.exporter_already_running(name)
            await self._write_state(name, StoredState(False, stored.offset, stored.ts))
        log.info("exporter %s: resumed at offset %d", name, stored.offset + 1)
        self._supervise()

    async def reset(self, name: str) -> None:
        """Start a paused exporter over from the beginning of the log (40963 when it is not paused)."""
        async with self._lock(name):
            self.get(name)
            if not self.stored_state(name).paused:
                raise errors.exporter_not_paused(name)
            await self._write_state(name, StoredState(True, -1, 0))
        log.info("exporter %s: reset to the beginning of the log", name)

    async def _stop(self, name: str) -> ExporterRunner | None:
        runner = self.runners.pop(name, None)
        if runner is not None:
            await runner.stop()
        return runner

    async def _commit(self, name: str, offset: int, ts: int) -> int | None:
        """Store a runner's progress; the offset of the record that stored it (None: not stored)."""
        async with self._lock(name):
            if self.stored_state(name).paused or name not in self.store.state.exporters:
                return None  # paused or deleted meanwhile: whoever did it stored what counts
            return await self._write_state(name, StoredState(False, offset, ts))

    # ---- running ----------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start supervising (on the event loop the store applies records on)."""
        logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per destination call
        self._supervisor = asyncio.create_task(self._supervise_forever(), name="exporters")

    async def close(self) -> None:
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        for name in list(self.runners):
            await self._stop(name)

    async def _supervise_forever(self) -> None:
        was_leading = False
        while True:
            try:
                leading = self.is_leader() and self.store.ready
                if leading != was_leading:
                    self._caught_up = False
                    if self.store.state.exporters:
                        log.info("exporters: %s", "this instance leads: running them" if leading else "stopped here")
                    was_leading = leading
                await self._reconcile(leading)
            except asyncio.CancelledError:
                raise
            except Exception:  # the loop must outlive any one failure
                log.exception("exporters: supervising failed")
            await asyncio.sleep(self.interval)

    def _supervise(self) -> None:
        """Reconcile soon (after a resume) rather than at the next tick."""
        loop_task = asyncio.create_task(self._reconcile(self.is_leader() and self.store.ready))
        loop_task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _reconcile(self, leading: bool) -> None:
        st = self.store.state
        for name, runner in list(self.runners.items()):
            value = st.exporters.get(name)
            changed = value is None or ExporterDefinition.from_stored(value, self.source_id) != runner.definition
            stop = not leading or changed or self.stored_state(name).paused
            if stop and self.runners.get(name) is runner:
                await self._stop(name)
        if not leading:
            return
        for name, value in list(st.exporters.items()):
            stored = self.stored_state(name)
            # A pause, update, reset or delete in progress holds the lock between stopping the runner and
            # writing what it decided: starting one here would undo it (a pause answered, then RUNNING).
            if stored.paused or name in self.runners or self._lock(name).locked():
                continue
            definition = ExporterDefinition.from_stored(value, self.source_id)

            async def commit(offset: int, ts: int, name: str = name) -> int | None:
                return await self._commit(name, offset, ts)

            runner = ExporterRunner(definition, self.store, stored.offset, commit, **self.runner_options)
            self.runners[name] = runner
            runner.start()


def _describe(d: ExporterDefinition) -> str:
    return (
        f"to {d.config.get('schema.registry.url')}, subjects {list(d.subjects)}, context {d.context_type} "
        f"{d.context_name!r}, rename {d.subject_rename_format or '${subject}'!r}"
    )
