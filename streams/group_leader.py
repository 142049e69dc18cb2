"""The group leader's side of the assignment protocol: who is alive, when to assign again, and how tasks
change hands. Pure logic driven by the membership thread (``streams/membership.py``), which feeds it every
member status it reads and publishes what ``tick`` returns.

- **Liveness.** A member is alive while its heartbeat counter (or incarnation) changed within the last
  ``session_timeout`` seconds of the leader's own monotonic clock; members' clocks are never compared.
  A new leader gives every member a fresh timeout, except the previous leader: the lease only changes hands
  when its holder went silent for that long or left, so it is presumed dead until it heartbeats again.
- **Lock-step generations.** Assignment ``g + 1`` is computed only once every live member reports that it
  applied ``g`` (it stopped whatever ``g`` took away from it); a newcomer that runs nothing does not hold
  anything up, and a member that dies stops counting when its session times out.
- **Cooperative hand-over.** When the assignor moves an active task from a live member ``X`` to ``Y``,
  generation ``g + 1`` takes it from ``X`` and gives ``Y`` only a standby of it (its state keeps up); once
  ``X`` has applied ``g + 1`` (committed, checkpointed and closed the task), ``g + 2`` makes ``Y`` the
  owner. A task is never given to a second active owner; if its owner died, it moves at once, and the
  task's fenced producer (``streams/task_producer.py``) keeps the presumed-dead owner from writing.
- **When to assign.** On the first tick, when the set of live members (or an incarnation) changes, while a
  hand-over is under way, when a member lost a task it was given (fenced or failed: the same assignment
  is published again under a new number so that its owner restarts it), and every
  ``probing_interval`` seconds while warm-ups are catching up. An assignment equal to the current one is
  not published.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from streams.assignor import AssignorConfig, ClientState, assign

__all__ = ["Assignment", "GroupLeader", "MemberAssignment", "MemberStatus"]

log = logging.getLogger("streams.group_leader")


@dataclass
class MemberStatus:
    """What a member publishes about itself (the membership topic, key = instance id)."""

    instance: str
    incarnation: str  # random per process start: a restarted instance is a new member
    server: str | None  # ``application_server``, where interactive queries reach it
    threads: int
    heartbeat: int  # increases with every status record
    generation: int  # the newest assignment it applied (-1: none)
    active: list[str] = field(default_factory=list)  # tasks it runs (or restores) as their owner
    replicas: list[str] = field(default_factory=list)  # standby and warm-up tasks it holds
    positions: dict[str, int] = field(default_factory=dict)  # task -> changelog offsets its local state reaches


@dataclass
class MemberAssignment:
    incarnation: str
    server: str | None
    active: list[str] = field(default_factory=list)
    standby: list[str] = field(default_factory=list)
    warmup: list[str] = field(default_factory=list)


@dataclass
class Assignment:
    """A numbered assignment (the assignment topic, key ``assignment``). Members apply only numbers higher
    than the last they applied; only the leader that holds the fenced assignor producer can write one."""

    generation: int
    leader: str
    members: dict[str, MemberAssignment] = field(default_factory=dict)

    def of(self, instance: str, incarnation: str) -> MemberAssignment | None:
        """What this assignment gives ``instance`` in its current ``incarnation`` (None: nothing)."""
        mine = self.members.get(instance)
        return mine if mine is not None and mine.incarnation == incarnation else None

    def owner(self, task: str) -> str | None:
        for instance, m in self.members.items():
            if task in m.active:
                return instance
        return None


class GroupLeader:
    """Decides the assignments while this instance (``me``) leads. ``current`` is the newest assignment
    published (by anyone); ``statuses`` what the members last said; ``now`` the monotonic clock."""

    def __init__(
        self,
        me: str,
        tasks: list[str],
        stateful: set[str],
        config: AssignorConfig,
        session_timeout: float,
        probing_interval: float,
        current: Assignment,
        statuses: dict[str, MemberStatus],
        now: float,
    ) -> None:
        self.me = me
        self._tasks = list(tasks)
        self._stateful = set(stateful)
        self._config = config
        self._session_timeout = session_timeout
        self._probing_interval = probing_interval
        self.current = current
        self.statuses: dict[str, MemberStatus] = {}
        self._heard: dict[str, tuple[str, int]] = {}
        self._last_seen: dict[str, float] = {}
        self._ends: dict[str, int] = {}
        self._intended: dict[str, str] = {}  # task -> its next owner, while the previous one lets go
        self._next_probe: float | None = None
        self._first = True
        for status in statuses.values():
            self.observe(status, now)
        previous = current.leader
        if previous and previous != me and previous in self._last_seen:
            self._last_seen[previous] = -math.inf  # presumed dead: the lease moved away from it

    # -- what the membership thread reads ----------------------------------------------------------------

    def observe(self, status: MemberStatus, now: float) -> None:
        heard = (status.incarnation, status.heartbeat)
        if self._heard.get(status.instance) != heard:
            self._heard[status.instance] = heard
            self._last_seen[status.instance] = now
        self.statuses[status.instance] = status
        for task, position in status.positions.items():
            if position > self._ends.get(task, -1):
                self._ends[task] = position

    def left(self, instance: str) -> None:
        """``instance`` left the group cleanly (it committed and closed its tasks first)."""
        if self.statuses.pop(instance, None) is not None:
            log.info("member %s left the group", instance)
        self._last_seen.pop(instance, None)
        self._heard.pop(instance, None)

    def published(self, assignment: Assignment) -> None:
        if assignment.generation > self.current.generation:
            self.current = assignment

    # -- deciding ----------------------------------------------------------------------------------------

    def _expire(self, now: float) -> None:
        for instance in list(self.statuses):
            silent = now - self._last_seen.get(instance, -math.inf)
            if silent > self._session_timeout:
                log.warning(
                    "member %s: no heartbeat for %s, presumed dead",
                    instance,
                    "ever" if math.isinf(silent) else f"{silent:.1f}s",
                )
                del self.statuses[instance]
                self._last_seen.pop(instance, None)

    def waiting_for(self) -> list[str]:
        """Live members that have not applied the current generation yet (and may still run what it moved)."""
        cur = self.current
        waiting = []
        for instance, s in self.statuses.items():
            if s.generation == cur.generation:
                continue
            if not s.active and cur.of(instance, s.incarnation) is None:
                continue  # a newcomer: it runs nothing
            waiting.append(instance)
        return waiting

    def tick(self, now: float) -> Assignment | None:
        """The next assignment to publish, or None."""
        self._expire(now)
        if self.waiting_for():
            return None
        cur = self.current
        alive = self.statuses
        joined = {(i, s.incarnation) for i, s in alive.items()} != {(i, m.incarnation) for i, m in cur.members.items()}
        lost = any(
            set(mine.active) - set(s.active) for i, s in alive.items() if (mine := cur.of(i, s.incarnation)) is not None
        )
        probe = self._next_probe is not None and now >= self._next_probe
        if not (self._first or joined or lost or probe or self._intended):
            return None
        self._first = False
        if not alive:
            return None
        result = assign(self._tasks, self._stateful, self._clients(), self._config)
        members = {i: MemberAssignment(s.incarnation, s.server) for i, s in alive.items()}
        intended: dict[str, str] = {}
        for instance, planned in result.clients.items():
            mine = members[instance]
            for task in sorted(planned.active):
                holders = [j for j, s in alive.items() if j != instance and task in s.active]
                if holders:
                    intended[task] = instance  # the holder lets go first
                    if task in self._stateful:
                        mine.standby.append(task)
                else:
                    mine.active.append(task)
            mine.standby.extend(sorted(planned.standby))
            mine.warmup.extend(sorted(planned.warmup))
        for m in members.values():
            m.active.sort()
            m.standby = sorted(set(m.standby))
        self._intended = intended
        self._next_probe = now + self._probing_interval if result.probing_rebalance_needed else None
        if members == cur.members and not lost:
            return None
        return Assignment(cur.generation + 1, self.me, members)

    def _clients(self) -> dict[str, ClientState]:
        cur = self.current
        clients = {}
        for instance, s in self.statuses.items():
            mine = cur.of(instance, s.incarnation)
            active = set(mine.active) if mine is not None else set()
            active |= {task for task, owner in self._intended.items() if owner == instance}
            replicas = set(mine.standby) | set(mine.warmup) if mine is not None else set()
            lags: dict[str, float] = {}
            for task in self._stateful:
                if task in s.active:
                    lags[task] = 0
                else:
                    lags[task] = max(0, self._ends.get(task, 0) - s.positions.get(task, 0))
            clients[instance] = ClientState(s.threads, frozenset(active), frozenset(replicas), lags)
        return clients

    def lag(self, instance: str, task: str) -> int | None:
        """How far ``instance``'s state of ``task`` is behind the newest position any member reported."""
        s = self.statuses.get(instance)
        if s is None or task not in self._ends:
            return None
        return max(0, self._ends[task] - s.positions.get(task, 0))
