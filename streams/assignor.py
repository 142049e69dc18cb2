"""The task assignor: which instance runs each task, and where its standby and warm-up replicas live.

A pure function (no I/O, no clocks): the group leader (``streams/group_leader.py``) calls ``assign`` with
the tasks, the live instances and what each one reports, and publishes the result. The behaviour follows
Kafka Streams' ``HighAvailabilityTaskAssignor``:

1. **Balanced and sticky.** Stateful active tasks are spread over instances in proportion to their stream
   threads (each instance gets ``floor`` or ``ceil`` of its share); a task stays on its previous owner
   while that owner is within its share.
2. **Lag-aware.** An instance is *caught up* on a task when its local state is within
   ``acceptable_recovery_lag`` changelog records of the end. An active task goes to its balanced target
   only if the target is caught up; otherwise it stays on (or goes to) a caught-up instance, the previous
   owner first, and the target gets a **warm-up replica** (at most ``max_warmup_replicas`` in one
   assignment) that restores in the background. When no instance is caught up the task goes to the most
   caught-up one. ``probing_rebalance_needed`` tells the leader to look again later: once a warm-up has
   caught up, the next assignment moves the task.
3. **Standbys.** Each stateful task gets ``num_standby_replicas`` standbys, never on the instance running
   its active and at most one replica per instance, balanced by load and kept on instances that already
   hold the task's state (a standby that would land on an instance far behind stays where the state is and
   warms the new place up, like an active).
4. **Stateless tasks** fill up the instances so that the total of active tasks is balanced per thread.

Task ids are ``"<sub-topology>_<partition>"``; a task already carries all of its co-partitioned inputs, so
assigning tasks keeps them together.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["UNKNOWN_LAG", "AssignorConfig", "ClientAssignment", "ClientState", "TaskAssignment", "assign", "task_key"]

#: The lag of an instance that reports nothing about a task (no local state): never caught up.
UNKNOWN_LAG = math.inf


def task_key(task_id: str) -> tuple[int, int]:
    """Sort key of a task id ``"<sub>_<partition>"``: numerically, so ``0_10`` follows ``0_9``."""
    sub, _, partition = task_id.partition("_")
    return int(sub), int(partition)


@dataclass(frozen=True)
class AssignorConfig:
    """Kafka Streams' names: ``num.standby.replicas``, ``max.warmup.replicas``, ``acceptable.recovery.lag``."""

    num_standby_replicas: int = 0
    max_warmup_replicas: int = 2
    acceptable_recovery_lag: int = 10_000

    def __post_init__(self) -> None:
        for name in ("num_standby_replicas", "acceptable_recovery_lag"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        value = self.max_warmup_replicas
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"max_warmup_replicas must be an integer >= 1, got {value!r}")


@dataclass(frozen=True)
class ClientState:
    """What the leader knows about one instance: its stream threads, what it ran in the previous
    assignment (``standby`` includes warm-ups) and its lag per stateful task (missing: ``UNKNOWN_LAG``)."""

    threads: int = 1
    active: frozenset[str] = frozenset()
    standby: frozenset[str] = frozenset()
    lags: Mapping[str, float] = field(default_factory=dict)

    def lag(self, task: str) -> float:
        return self.lags.get(task, UNKNOWN_LAG)


@dataclass
class ClientAssignment:
    active: set[str] = field(default_factory=set)
    standby: set[str] = field(default_factory=set)
    warmup: set[str] = field(default_factory=set)

    def holds(self, task: str) -> bool:
        return task in self.active or task in self.standby or task in self.warmup


@dataclass
class TaskAssignment:
    clients: dict[str, ClientAssignment]
    #: Some task could not go where balance wants it because the target is not caught up yet: assign
    #: again after ``probing_rebalance_interval_ms``, when warm-ups (or standbys) may have caught up.
    probing_rebalance_needed: bool = False

    def owner(self, task: str) -> str | None:
        for client, a in self.clients.items():
            if task in a.active:
                return client
        return None


def _quotas(n: int, clients: list[str], threads: Mapping[str, int], previous: Mapping[str, int]) -> dict[str, int]:
    """How many of ``n`` tasks each client gets: its thread share rounded down, the remainder going to the
    largest fractions, then to clients that held more beyond their share before (so a stable assignment
    keeps its quotas), then by id."""
    total = sum(threads[c] for c in clients)
    shares = {c: n * threads[c] / total for c in clients}
    quota = {c: math.floor(shares[c] + 1e-9) for c in clients}
    left = n - sum(quota.values())
    order = sorted(clients, key=lambda c: (-round(shares[c] - quota[c], 9), quota[c] - previous.get(c, 0), c))
    for c in order[:left]:
        quota[c] += 1
    return quota


def _balanced(
    tasks: list[str],
    clients: list[str],
    threads: Mapping[str, int],
    previous_owner: Mapping[str, str],
    caught_up: Mapping[str, list[str]],
) -> dict[str, str]:
    """Each task to one client, every client getting exactly its quota. A task stays with its previous
    owner while the owner is within quota; an owner over quota keeps first the tasks no other client is
    caught up on. The others go to a caught-up client with room (``caught_up[task]`` order), else to the
    client with the most room."""
    previous_counts: dict[str, int] = {}
    for t in tasks:
        owner = previous_owner.get(t)
        if owner is not None:
            previous_counts[owner] = previous_counts.get(owner, 0) + 1
    quota = _quotas(len(tasks), clients, threads, previous_counts)
    count = dict.fromkeys(clients, 0)
    target: dict[str, str] = {}
    alternatives = {t: [c for c in caught_up.get(t, []) if c != previous_owner.get(t)] for t in tasks}
    for t in sorted(tasks, key=lambda t: (len(alternatives[t]), task_key(t))):
        owner = previous_owner.get(t)
        if owner in count and count[owner] < quota[owner]:
            target[t] = owner
            count[owner] += 1
    for t in tasks:
        if t in target:
            continue
        room = [c for c in clients if count[c] < quota[c]]
        preferred = [c for c in caught_up.get(t, []) if c in room]
        choice = preferred[0] if preferred else min(room, key=lambda c: (count[c] - quota[c], c))
        target[t] = choice
        count[choice] += 1
    return target


def assign(
    tasks: Iterable[str], stateful: Iterable[str], clients: Mapping[str, ClientState], config: AssignorConfig
) -> TaskAssignment:
    """Assign every task in ``tasks`` (those in ``stateful`` have changelogged state) to ``clients``."""
    ids = sorted(clients)
    result = TaskAssignment({c: ClientAssignment() for c in ids})
    all_tasks = sorted(set(tasks), key=task_key)
    if not ids or not all_tasks:
        return result
    stateful_set = set(stateful)
    stateful_tasks = [t for t in all_tasks if t in stateful_set]
    stateless_tasks = [t for t in all_tasks if t not in stateful_set]
    threads = {c: max(1, clients[c].threads) for c in ids}
    acceptable = config.acceptable_recovery_lag

    def lag(c: str, t: str) -> float:
        return clients[c].lag(t)

    def caught_up(c: str, t: str) -> bool:
        return lag(c, t) <= acceptable

    previous_owner = {t: c for c in ids for t in clients[c].active}
    has_state = {t: sorted((c for c in ids if caught_up(c, t)), key=lambda c: (lag(c, t), c)) for t in stateful_tasks}

    # 1. A balanced, sticky target for the stateful actives, ignoring lag (caught-up clients preferred
    #    for tasks that must move anyway).
    target = _balanced(stateful_tasks, ids, threads, previous_owner, has_state)

    # 2. Lag: keep a task where its state is when the target is not caught up, and warm the target up.
    active_load = dict.fromkeys(ids, 0)
    owner: dict[str, str] = {}
    warmup_wanted: list[tuple[str, str]] = []  # (task, client) in task order
    for t in stateful_tasks:
        d = target[t]
        chosen = d
        if not caught_up(d, t):
            if has_state[t]:
                chosen = min(has_state[t], key=lambda c: (c != previous_owner.get(t), active_load[c] / threads[c], c))
            else:
                best = min(ids, key=lambda c: (lag(c, t), c != previous_owner.get(t), active_load[c] / threads[c], c))
                if lag(best, t) < lag(d, t):
                    chosen = best
            if chosen != d:
                warmup_wanted.append((t, d))
        owner[t] = chosen
        active_load[chosen] += 1
        result.clients[chosen].active.add(t)

    # 3. Stateless actives balance the total active load per thread.
    quota_total = _quotas(len(all_tasks), ids, threads, {c: len(clients[c].active) for c in ids})
    for t in stateless_tasks:
        c = previous_owner.get(t)
        if c in active_load and active_load[c] < quota_total[c]:
            owner[t] = c
            active_load[c] += 1
    for t in stateless_tasks:
        if t not in owner:
            # the most room under the quota; lag-aware moves may have filled some instances beyond it
            owner[t] = min(ids, key=lambda c: (active_load[c] - quota_total[c], active_load[c] / threads[c], c))
            active_load[owner[t]] += 1
        result.clients[owner[t]].active.add(t)

    # 4. Standbys: every instance carries at most about its thread share of all replicas (active and
    #    standby). A standby stays where it was (least lag first) while that instance is within its share;
    #    the rest go to the instances with the most room, lag-aware like the actives.
    needed = {t: min(config.num_standby_replicas, len(ids) - 1) for t in stateful_tasks}
    replicas = len(all_tasks) + sum(needed.values())
    total_threads = sum(threads.values())
    # Shares rounded up (no tie-breaks), so that an assignment within them is kept as it is.
    cap = {c: math.ceil(replicas * threads[c] / total_threads - 1e-9) for c in ids}
    load = dict(active_load)  # active + standby + warm-up replicas

    def place_standby(t: str, c: str) -> None:
        result.clients[c].standby.add(t)
        load[c] += 1
        needed[t] -= 1

    for t in stateful_tasks:
        for c in sorted((c for c in ids if t in clients[c].standby), key=lambda c: (lag(c, t), c)):
            if needed[t] > 0 and not result.clients[c].holds(t) and load[c] < cap[c]:
                place_standby(t, c)
    for t in stateful_tasks:
        while needed[t] > 0:
            allowed = [c for c in ids if not result.clients[c].holds(t)]
            d = min(allowed, key=lambda c: (load[c] - cap[c], load[c] / threads[c], c))
            chosen = d
            if not caught_up(d, t):
                holders = [c for c in has_state[t] if c in allowed]
                if holders:
                    chosen = min(holders, key=lambda c: (load[c] - cap[c], c))
                else:  # nobody is caught up: the most caught-up instance, if it is ahead of the target
                    best = min(allowed, key=lambda c: (lag(c, t), c))
                    if lag(best, t) < lag(d, t):
                        chosen = best
                # Warm the target up only where moving there later evens the load by a task or more.
                if chosen != d and (load[chosen] + 1) / threads[chosen] > (load[d] + 1) / threads[d] + 1:
                    warmup_wanted.append((t, d))
            place_standby(t, chosen)

    # 5. Warm-ups, actives first, within the budget; a target already holding a replica needs none.
    budget = config.max_warmup_replicas
    for t, d in warmup_wanted:
        if budget == 0:
            break
        if result.clients[d].holds(t):
            continue
        result.clients[d].warmup.add(t)
        load[d] += 1
        budget -= 1
    # Moves are pending while a target is not caught up, with or without a warm-up of its own (a standby
    # may be warming it, or the budget was spent): look again later.
    result.probing_rebalance_needed = bool(warmup_wanted)
    return result
