"""How the instances of an application find each other and agree on who runs what, on any log with
leases (SQLite shared by processes on one machine, or Kafka).

Three internal topics per application (``TopicNames``):

- ``<app>-membership`` (compacted, one partition): every instance writes its ``MemberStatus`` under its
  instance id, as a heartbeat every ``heartbeat_interval`` and at once when its tasks change: incarnation,
  ``application_server``, threads, the assignment generation it applied, the tasks it runs and holds,
  and how far its local state of each task reaches in the changelogs (from running tasks, replicas and
  local checkpoints). A clean shutdown writes a tombstone.
- ``<app>-assignment`` (compacted, one partition): the leader's numbered ``Assignment``s: per instance
  (and incarnation) its active, standby and warm-up tasks.
- ``<app>-leader``: the ``Log.lease`` the instances elect their leader with (on Kafka, partition 0 of a
  one-partition topic owned through a consumer group; on SQLite an expiring lease row). The lease's
  timeout is the session timeout: how long a silent instance keeps its tasks.

Every instance reads both topics from the beginning (one consumer, ``assign``) and hands each assignment
newer than the last it saw to the app. The leader computes assignments (``GroupLeader``) and writes them
through a transactional producer with the fixed id ``<app>-assignor``: a new leader's
``init_transactions`` fences the previous one, so a leader that was paused cannot publish afterwards, and
the generation (one more than the newest it read, after a barrier) orders what members apply. An
instance that finds it could not heartbeat for longer than the session timeout (it was paused) presumes
it was expelled: its tasks are closed without committing, and it rejoins as a newcomer (a new
incarnation, so that no assignment made for the old one is awaited from it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Protocol

import orjson

from streams.assignor import AssignorConfig
from streams.group_leader import Assignment, GroupLeader, MemberAssignment, MemberStatus
from streams.log.base import OFFSET_BEGINNING, Lease, Log, LogError, Producer, ProducerFencedError, TopicPartition
from streams.metadata import TopicNames

__all__ = [
    "Membership",
    "MembershipListener",
    "decode_assignment",
    "decode_status",
    "encode_assignment",
    "encode_status",
]

log = logging.getLogger("streams.membership")

ASSIGNMENT_KEY = b"assignment"
BARRIER_KEY = b"barrier"
_LOOP_SECONDS = 0.05
_COMPACT_SECONDS = 300.0  # how often a leader compacts the group's topics on a log that does not by itself


def encode_status(status: MemberStatus) -> bytes:
    return orjson.dumps(asdict(status))


def decode_status(value: bytes) -> MemberStatus | None:
    try:
        data = orjson.loads(value)
        return MemberStatus(**data)
    except (orjson.JSONDecodeError, TypeError) as exc:
        log.warning("ignoring a malformed member status (%s): %r", exc, value[:200])
        return None


def encode_assignment(assignment: Assignment) -> bytes:
    return orjson.dumps(asdict(assignment))


def decode_assignment(value: bytes) -> Assignment | None:
    try:
        data = orjson.loads(value)
        members = {i: MemberAssignment(**m) for i, m in data["members"].items()}
        return Assignment(int(data["generation"]), str(data["leader"]), members)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        log.warning("ignoring a malformed assignment (%s): %r", exc, value[:200])
        return None


class MembershipListener(Protocol):
    """The app's side: it applies assignments and says what to report."""

    def on_assignment(self, assignment: Assignment) -> None:
        """A newer assignment was published (it may give this instance nothing)."""

    def on_expelled(self, reason: str) -> None:
        """This instance was silent for longer than the session timeout: close active tasks unclean."""

    def member_status(self) -> tuple[int, list[str], list[str], dict[str, int]]:
        """(generation applied, active tasks, replica tasks, task -> changelog position of local state)."""

    def on_membership_failed(self, error: BaseException) -> None:
        """The membership thread stopped on ``error``."""


class Membership(threading.Thread):
    """This instance's membership: heartbeats, the election, and the leader's work while it leads."""

    def __init__(
        self,
        log_backend: Log,
        names: TopicNames,
        *,
        instance_id: str,
        incarnation: str,
        server: str | None,
        threads: int,
        tasks: list[str],
        stateful: set[str],
        assignor: AssignorConfig,
        probing_interval: float,
        session_timeout: float,
        heartbeat_interval: float,
        listener: MembershipListener,
        progress_interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(name=f"{names.application_id}-membership", daemon=True)
        self._log = log_backend
        self._names = names
        self.instance_id = instance_id
        self.incarnation = incarnation  # a new one each time it rejoins after being expelled
        self._first_incarnation = incarnation
        self._rejoins = 0
        self._server = server
        self._threads = threads
        self._tasks = tasks
        self._stateful = stateful
        self._assignor = assignor
        self._probing_interval = probing_interval
        self.session_timeout = session_timeout
        self._heartbeat_interval = heartbeat_interval
        self._listener = listener
        self._progress_interval = progress_interval
        self._clock = clock
        self._stop_event = threading.Event()
        self._beat_now = threading.Event()
        self._membership_tp = TopicPartition(names.membership(), 0)
        self._assignment_tp = TopicPartition(names.assignment(), 0)
        self.statuses: dict[str, MemberStatus] = {}
        self.assignment = Assignment(0, "")
        self.leader: GroupLeader | None = None
        self._writer: Producer | None = None
        self._catch_up_to: int | None = None  # the barrier a new leader reads up to before it leads
        self._heartbeats = 0
        self._lead_after = 0.0  # no leading before (after being expelled or fenced: let the lease settle)
        self._compact_at = 0.0
        self.ready = threading.Event()  # the first status is written

    # -- what the app calls ------------------------------------------------------------------------------

    def heartbeat_now(self) -> None:
        """Write this instance's status at the next loop iteration (its tasks changed)."""
        self._beat_now.set()

    def shutdown(self) -> None:
        self._stop_event.set()

    @property
    def is_leader(self) -> bool:
        return self.leader is not None

    def lag(self, task: str) -> int | None:
        """How far this instance's state of ``task`` is behind the newest position any member reported."""
        mine = self.statuses.get(self.instance_id)
        if mine is None:
            return None
        ends = [s.positions.get(task, 0) for s in list(self.statuses.values())]
        return max(0, max(ends, default=0) - mine.positions.get(task, 0))

    def lags(self) -> dict[str, dict[str, int]]:
        """Instance -> for each task it runs or holds a replica of, how many changelog records its state is
        behind the newest position any member reported (from the members' last heartbeats)."""
        statuses = list(self.statuses.values())
        ends: dict[str, int] = {}
        for status in statuses:
            for task, position in status.positions.items():
                ends[task] = max(ends.get(task, 0), position)
        return {
            s.instance: {t: max(0, ends.get(t, 0) - s.positions.get(t, 0)) for t in [*s.active, *s.replicas]}
            for s in statuses
        }

    # -- the loop ----------------------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            log.error("membership of %s failed: %s", self.instance_id, exc, exc_info=True)
            self._listener.on_membership_failed(exc)

    def _run(self) -> None:
        lease = self._log.lease(self._names.leader(), self.instance_id, self.session_timeout)
        self.session_timeout = lease.timeout  # the log's own setting where it has one (a group's session)
        self._heartbeat_interval = min(self._heartbeat_interval, self.session_timeout / 4)
        producer = self._log.producer()
        consumer = self._log.consumer(None, client_id=f"{self._names.application_id}-membership-{self.instance_id}")
        try:
            consumer.assign({self._membership_tp: OFFSET_BEGINNING, self._assignment_tp: OFFSET_BEGINNING})
            self._loop(lease, producer, consumer)
        finally:
            self._step_down("shutting down")
            try:
                producer.produce(self._membership_tp.topic, None, self.instance_id.encode(), partition=0)
            except LogError as exc:
                log.warning("could not announce leaving the group: %s", exc)
            for closer in (lease, consumer, producer):
                try:
                    closer.close()
                except Exception as exc:
                    log.debug("closing %s: %s", type(closer).__name__, exc)

    def _loop(self, lease: Lease, producer: Producer, consumer: Any) -> None:
        last_beat = self._clock()
        next_beat = last_beat
        handed = 0
        progress_at = last_beat + self._progress_interval
        while not self._stop_event.is_set():
            records = consumer.poll(_LOOP_SECONDS, 1000)
            now = self._clock()
            if now - last_beat > self.session_timeout and self._heartbeats:
                self._rejoin(now - last_beat)
                self._lead_after = now + self.session_timeout
                next_beat = now
            for rec in records:
                if rec.topic == self._membership_tp.topic:
                    self._on_status(rec.key, rec.value, now)
                elif rec.key == ASSIGNMENT_KEY and rec.value is not None:
                    assignment = decode_assignment(rec.value)
                    if assignment is not None and assignment.generation > self.assignment.generation:
                        self.assignment = assignment
                        if self.leader is not None:
                            self.leader.published(assignment)
            self._lead(lease, consumer, now)
            if self.assignment.generation > handed:
                handed = self.assignment.generation
                self._listener.on_assignment(self.assignment)
            if self._beat_now.is_set() or now >= next_beat:
                self._beat_now.clear()
                if self._heartbeat(producer):
                    last_beat = now
                    next_beat = now + self._heartbeat_interval
            if now >= progress_at:
                progress_at = now + self._progress_interval
                self._log_progress()

    def _rejoin(self, silent: float) -> None:
        """This instance was silent for longer than the session timeout: the group presumes it dead and gave
        (or will give) its tasks to others, whose fenced producers end its own. Close them without
        committing and come back as a new incarnation: the newest assignment may still name the old one,
        and a leader (this one included) would wait forever for the old incarnation to apply it, while
        this member, having applied nothing since, reports generation -1 and waits for a newer one."""
        self._rejoins += 1
        self.incarnation = f"{self._first_incarnation}.{self._rejoins}"
        log.warning(
            "instance %s expelled from the group after %d ms without a heartbeat (session timeout %d ms); "
            "closing its tasks without committing and rejoining as incarnation %s",
            self.instance_id,
            silent * 1000,
            self.session_timeout * 1000,
            self.incarnation,
        )
        self._listener.on_expelled(f"no heartbeat for {silent * 1000:.0f} ms: expelled from the group")
        self._step_down("expelled")

    def _on_status(self, key: bytes | None, value: bytes | None, now: float) -> None:
        if key is None:
            return
        instance = key.decode()
        if value is None:
            self.statuses.pop(instance, None)
            if self.leader is not None:
                self.leader.left(instance)
            return
        status = decode_status(value)
        if status is None:
            return
        self.statuses[instance] = status
        if self.leader is not None:
            self.leader.observe(status, now)

    def _heartbeat(self, producer: Producer) -> bool:
        generation, active, replicas, positions = self._listener.member_status()
        self._heartbeats += 1
        status = MemberStatus(
            self.instance_id,
            self.incarnation,
            self._server,
            self._threads,
            self._heartbeats,
            generation,
            sorted(active),
            sorted(replicas),
            positions,
        )
        try:
            producer.produce(self._membership_tp.topic, encode_status(status), self.instance_id.encode(), partition=0)
        except LogError as exc:
            log.warning("instance %s: heartbeat failed: %s", self.instance_id, exc)
            return False
        self.ready.set()
        return True

    # -- leading -----------------------------------------------------------------------------------------

    def _lead(self, lease: Lease, consumer: Any, now: float) -> None:
        held = lease.poll()
        if not held:
            if self._writer is not None:
                self._step_down("the lease moved to another instance")
            return
        if self._writer is None:
            if now >= self._lead_after:
                self._start_leading()
            return
        if self._catch_up_to is not None:
            if consumer.position(self._assignment_tp) <= self._catch_up_to:
                return
            self._catch_up_to = None
            self.leader = GroupLeader(
                self.instance_id,
                self._tasks,
                self._stateful,
                self._assignor,
                self.session_timeout,
                self._probing_interval,
                self.assignment,
                dict(self.statuses),
                now,
            )
            log.info("instance %s leads the group from generation %d", self.instance_id, self.assignment.generation)
        leader = self.leader
        if leader is None:
            return
        assignment = leader.tick(now)
        if assignment is not None:
            self._publish(assignment)
        if not self._log.capabilities.compacts_itself and now >= self._compact_at:
            # Heartbeats pile up in the membership topic; keep only each instance's newest.
            self._compact_at = now + _COMPACT_SECONDS
            for tp in (self._membership_tp, self._assignment_tp):
                try:
                    self._log.compact(tp.topic)
                except LogError as exc:
                    log.warning("compacting %s failed: %s", tp.topic, exc)

    def _start_leading(self) -> None:
        """Fence the previous leader's writer, then read the assignment topic up to a barrier of our own."""
        writer = self._log.producer(f"{self._names.application_id}-assignor")
        try:
            writer.init_transactions()
            landed: list[int] = []
            writer.begin_transaction()
            writer.send(
                self._assignment_tp.topic,
                b"{}",
                BARRIER_KEY,
                partition=0,
                on_delivery=lambda md, err: landed.append(md.offset) if md is not None else None,
            )
            writer.commit_transaction()
        except LogError as exc:
            log.warning("instance %s could not take the lead: %s", self.instance_id, exc)
            _close(writer)
            return
        self._writer = writer
        self._catch_up_to = landed[0] if landed else None

    def _publish(self, assignment: Assignment) -> None:
        writer = self._writer
        assert writer is not None
        try:
            writer.begin_transaction()
            writer.send(self._assignment_tp.topic, encode_assignment(assignment), ASSIGNMENT_KEY, partition=0)
            writer.commit_transaction()
        except LogError as exc:
            fenced = isinstance(exc, ProducerFencedError)
            log.warning(
                "instance %s: publishing generation %d failed (%s)%s",
                self.instance_id,
                assignment.generation,
                exc,
                ": another instance leads" if fenced else "",
            )
            self._step_down("publishing failed")
            self._lead_after = self._clock() + self.session_timeout
            return
        self.assignment = assignment
        assert self.leader is not None
        self.leader.published(assignment)
        log.info("generation %d: %s", assignment.generation, describe(assignment))

    def _step_down(self, reason: str) -> None:
        if self._writer is None:
            return
        log.info("instance %s stops leading: %s", self.instance_id, reason)
        _close(self._writer)
        self._writer = None
        self.leader = None
        self._catch_up_to = None

    def _log_progress(self) -> None:
        mine = self.assignment.of(self.instance_id, self.incarnation)
        role = "leader" if self.leader is not None else "member"
        if mine is None:
            log.info("instance %s (%s), generation %d: no tasks", self.instance_id, role, self.assignment.generation)
            return
        lags = {t: self.lag(t) for t in mine.standby + mine.warmup}
        log.info(
            "instance %s (%s), generation %d: active %s, standby %s, warm-up %s, replica lags %s",
            self.instance_id,
            role,
            self.assignment.generation,
            mine.active,
            mine.standby,
            mine.warmup,
            lags,
        )


def describe(assignment: Assignment) -> str:
    parts = []
    for instance, m in sorted(assignment.members.items()):
        parts.append(
            f"{instance}: active {m.active}"
            + (f", standby {m.standby}" if m.standby else "")
            + (f", warm-up {m.warmup}" if m.warmup else "")
        )
    return "; ".join(parts) or "no members"


def _close(producer: Producer) -> None:
    # A fenced Kafka producer may wait out its timeout on close: do it off the membership thread.
    def close() -> None:
        try:
            producer.close()
        except Exception as exc:
            log.debug("closing the assignor producer: %s", exc)

    threading.Thread(target=close, name="assignor-close", daemon=True).start()
