"""The task assignor as a pure function: a table of scenarios with their exact assignments, then properties
over random memberships (validity, lag-awareness, balance, stickiness, convergence through warm-ups)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pytest

from streams.assignor import UNKNOWN_LAG, AssignorConfig, ClientState, TaskAssignment, assign, task_key


def tasks(subs: int, partitions: int) -> list[str]:
    return [f"{s}_{p}" for s in range(subs) for p in range(partitions)]


def lags(ts: list[str], lag: float) -> dict[str, float]:
    return dict.fromkeys(ts, lag)


def table(result: TaskAssignment) -> dict[str, tuple[list[str], list[str], list[str]]]:
    """client -> (active, standby, warm-up), each sorted."""
    return {
        c: (sorted(a.active, key=task_key), sorted(a.standby, key=task_key), sorted(a.warmup, key=task_key))
        for c, a in result.clients.items()
    }


@dataclass
class Scenario:
    name: str
    tasks: list[str]
    stateful: list[str]
    clients: dict[str, ClientState]
    config: AssignorConfig
    expected: dict[str, tuple[list[str], list[str], list[str]]]
    probing: bool = False


T4 = tasks(1, 4)
T9 = tasks(3, 3)
SCENARIOS = [
    Scenario(
        "fresh application, two instances, empty changelogs",
        T4,
        T4,
        {"a": ClientState(lags=lags(T4, 0)), "b": ClientState(lags=lags(T4, 0))},
        AssignorConfig(),
        {"a": (["0_0", "0_1"], [], []), "b": (["0_2", "0_3"], [], [])},
    ),
    Scenario(
        "new instance with no state: actives stay, at most max_warmup_replicas warm-ups, standbys stay "
        "where the state is",
        T9,
        T9,
        {
            "a": ClientState(active=frozenset(T9), lags=lags(T9, 0)),
            "b": ClientState(standby=frozenset(T9), lags=lags(T9, 10)),
            "c": ClientState(),
        },
        AssignorConfig(num_standby_replicas=1, max_warmup_replicas=2, acceptable_recovery_lag=11),
        {
            "a": (["0_0", "0_1", "0_2", "2_0", "2_1", "2_2"], ["1_0", "1_1", "1_2"], []),
            "b": (["1_0", "1_1", "1_2"], ["0_0", "0_1", "0_2", "2_0", "2_1", "2_2"], []),
            "c": ([], [], ["2_0", "2_1"]),
        },
        probing=True,
    ),
    Scenario(
        "new instance within acceptable_recovery_lag: tasks move at once",
        T4,
        T4,
        {"a": ClientState(active=frozenset(T4), lags=lags(T4, 0)), "b": ClientState(lags=lags(T4, 500))},
        AssignorConfig(acceptable_recovery_lag=1000),
        {"a": (["0_0", "0_1"], [], []), "b": (["0_2", "0_3"], [], [])},
    ),
    Scenario(
        "instance gone: its tasks go to the survivor, whose standbys become actives; no room for standbys",
        T4,
        T4,
        {"a": ClientState(active=frozenset(T4[:2]), standby=frozenset(T4[2:]), lags=lags(T4, 0))},
        AssignorConfig(num_standby_replicas=1),
        {"a": (T4, [], [])},
    ),
    Scenario(
        "the previous owner fell behind: the caught-up instance takes the task, the owner warms up",
        ["0_0", "0_1"],
        ["0_0"],
        {
            "a": ClientState(active=frozenset({"0_0"}), lags={"0_0": 500}),
            "b": ClientState(active=frozenset({"0_1"}), lags={"0_0": 0}),
        },
        AssignorConfig(acceptable_recovery_lag=100),
        {"a": (["0_1"], [], ["0_0"]), "b": (["0_0"], [], [])},
        probing=True,
    ),
    Scenario(
        "nobody caught up: the most caught-up instance runs it, the next one holds the standby",
        ["0_0"],
        ["0_0"],
        {
            "a": ClientState(lags={"0_0": UNKNOWN_LAG}),
            "b": ClientState(lags={"0_0": 1000}),
            "c": ClientState(lags={"0_0": 500}),
        },
        AssignorConfig(num_standby_replicas=1, acceptable_recovery_lag=100),
        {"a": ([], [], ["0_0"]), "b": ([], ["0_0"], []), "c": (["0_0"], [], [])},
        probing=True,
    ),
    Scenario(
        "standbys: each instance holds the other's tasks",
        ["0_0", "0_1"],
        ["0_0", "0_1"],
        {
            "a": ClientState(active=frozenset({"0_0"}), lags={"0_0": 0, "0_1": 0}),
            "b": ClientState(active=frozenset({"0_1"}), lags={"0_0": 0, "0_1": 0}),
        },
        AssignorConfig(num_standby_replicas=1),
        {"a": (["0_0"], ["0_1"], []), "b": (["0_1"], ["0_0"], [])},
    ),
    Scenario(
        "stateless tasks get no standbys and are balanced at once",
        ["0_0", "0_1"],
        [],
        {"a": ClientState(active=frozenset({"0_0", "0_1"})), "b": ClientState()},
        AssignorConfig(num_standby_replicas=1),
        {"a": (["0_0"], [], []), "b": (["0_1"], [], [])},
    ),
    Scenario(
        "warm-ups are capped by max_warmup_replicas",
        tasks(1, 6),
        tasks(1, 6),
        {"a": ClientState(active=frozenset(tasks(1, 6)), lags=lags(tasks(1, 6), 0)), "b": ClientState()},
        AssignorConfig(max_warmup_replicas=1),
        {"a": (tasks(1, 6), [], []), "b": ([], [], ["0_3"])},
        probing=True,
    ),
    Scenario(
        "a warmed-up instance gets the task it warmed up; no new warm-ups",
        T4,
        T4,
        {
            "a": ClientState(active=frozenset(T4), lags=lags(T4, 0)),
            "b": ClientState(standby=frozenset({"0_1"}), lags={"0_1": 0}),
            "c": ClientState(standby=frozenset({"0_2"}), lags={"0_2": 0}),
        },
        AssignorConfig(acceptable_recovery_lag=0),
        {"a": (["0_0", "0_3"], [], []), "b": (["0_1"], [], []), "c": (["0_2"], [], [])},
    ),
    Scenario(
        "threads: an instance with two threads gets twice the tasks",
        tasks(1, 6),
        tasks(1, 6),
        {"a": ClientState(threads=2, lags=lags(tasks(1, 6), 0)), "b": ClientState(lags=lags(tasks(1, 6), 0))},
        AssignorConfig(),
        {"a": (["0_0", "0_1", "0_2", "0_3"], [], []), "b": (["0_4", "0_5"], [], [])},
    ),
    Scenario(
        "stateless tasks balance the total when stateful ones must stay",
        ["0_0", "0_1", "1_0", "1_1"],
        ["0_0", "0_1"],
        {
            "a": ClientState(active=frozenset({"0_0", "0_1", "1_0", "1_1"}), lags={"0_0": 0, "0_1": 0}),
            "b": ClientState(),
        },
        AssignorConfig(max_warmup_replicas=1),
        {"a": (["0_0", "0_1"], [], []), "b": (["1_0", "1_1"], [], ["0_1"])},
        probing=True,
    ),
    Scenario(
        "sub-topologies are balanced task by task, 10 tasks over 3 instances: 4/3/3",
        tasks(2, 5),
        tasks(2, 5),
        {c: ClientState(lags=lags(tasks(2, 5), 0)) for c in "abc"},
        AssignorConfig(),
        {
            "a": (["0_0", "0_1", "0_2", "0_3"], [], []),
            "b": (["0_4", "1_0", "1_1"], [], []),
            "c": (["1_2", "1_3", "1_4"], [], []),
        },
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_scenario(scenario: Scenario) -> None:
    result = assign(scenario.tasks, scenario.stateful, scenario.clients, scenario.config)
    assert table(result) == scenario.expected
    assert result.probing_rebalance_needed is scenario.probing
    check_valid(result, scenario.tasks, scenario.stateful, scenario.clients, scenario.config)


def test_no_clients_or_no_tasks() -> None:
    assert assign(T4, T4, {}, AssignorConfig()).clients == {}
    assert table(assign([], [], {"a": ClientState()}, AssignorConfig())) == {"a": ([], [], [])}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_standby_replicas": -1}, "num_standby_replicas must be an integer >= 0, got -1"),
        ({"max_warmup_replicas": 0}, "max_warmup_replicas must be an integer >= 1, got 0"),
        ({"acceptable_recovery_lag": 1.5}, "acceptable_recovery_lag must be an integer >= 0, got 1.5"),
    ],
)
def test_config_is_checked(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as info:
        AssignorConfig(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message


# -- properties over random memberships ------------------------------------------------------------------


def check_valid(
    result: TaskAssignment,
    all_tasks: list[str],
    stateful: list[str],
    clients: dict[str, ClientState],
    config: AssignorConfig,
) -> None:
    assert set(result.clients) == set(clients)
    owners = {t: [c for c, a in result.clients.items() if t in a.active] for t in all_tasks}
    assert all(len(o) == 1 for o in owners.values()), owners
    for t in all_tasks:
        holders = [c for c, a in result.clients.items() if a.holds(t)]
        assert len(holders) == len(set(holders))
        for c, a in result.clients.items():
            # one replica per instance: active, standby and warm-up are exclusive
            assert (t in a.active) + (t in a.standby) + (t in a.warmup) <= 1, (t, c)
        standbys = [c for c, a in result.clients.items() if t in a.standby]
        if t in stateful:
            assert len(standbys) == min(config.num_standby_replicas, len(clients) - 1), (t, standbys)
        else:
            assert standbys == [] and not any(t in a.warmup for a in result.clients.values())
    assert sum(len(a.warmup) for a in result.clients.values()) <= config.max_warmup_replicas
    assert result.probing_rebalance_needed or not any(a.warmup for a in result.clients.values())
    for t in stateful:
        (owner,) = owners[t]
        if clients[owner].lag(t) > config.acceptable_recovery_lag:
            # never on an instance that is behind while another one is caught up
            assert all(s.lag(t) > config.acceptable_recovery_lag for s in clients.values()), t
            assert clients[owner].lag(t) == min(s.lag(t) for s in clients.values()) or clients[owner].lag(t) == math.inf


def random_membership(rng: random.Random) -> tuple[list[str], list[str], dict[str, ClientState], AssignorConfig]:
    all_tasks = tasks(rng.randint(1, 3), rng.randint(1, 8))
    stateful = [t for t in all_tasks if rng.random() < 0.7]
    names = [f"i{n}" for n in range(rng.randint(1, 6))]
    previous: dict[str, str] = {t: rng.choice([*names, "gone"]) for t in all_tasks}
    clients = {}
    for c in names:
        active = frozenset(t for t, o in previous.items() if o == c)
        standby = frozenset(t for t in stateful if t not in active and rng.random() < 0.3)
        lag_of = {t: rng.choice([0, 5, 50, 5000, UNKNOWN_LAG]) for t in stateful}
        lag_of.update({t: 0 for t in active if t in stateful and rng.random() < 0.8})
        clients[c] = ClientState(threads=rng.randint(1, 3), active=active, standby=standby, lags=lag_of)
    config = AssignorConfig(rng.randint(0, 2), rng.randint(1, 3), rng.choice([0, 10, 100]))
    return all_tasks, stateful, clients, config


def test_random_memberships_give_valid_lag_aware_assignments() -> None:
    rng = random.Random(14)
    for _ in range(400):
        all_tasks, stateful, clients, config = random_membership(rng)
        check_valid(assign(all_tasks, stateful, clients, config), all_tasks, stateful, clients, config)


def caught_up_everywhere(clients: dict[str, ClientState], stateful: list[str]) -> dict[str, ClientState]:
    return {c: ClientState(s.threads, s.active, s.standby, lags(stateful, 0)) for c, s in clients.items()}


def test_balance_when_every_instance_is_caught_up() -> None:
    rng = random.Random(15)
    for _ in range(300):
        all_tasks, stateful, clients, config = random_membership(rng)
        clients = caught_up_everywhere(clients, stateful)
        result = assign(all_tasks, stateful, clients, config)
        total_threads = sum(s.threads for s in clients.values())
        for c, a in result.clients.items():
            share = len(stateful) * clients[c].threads / total_threads
            assert math.floor(share) <= len(a.active & set(stateful)) <= math.ceil(share), (c, share, a)
        assert not result.probing_rebalance_needed
        if len({s.threads for s in clients.values()}) == 1:
            counts = [len(a.active) for a in result.clients.values()]
            assert max(counts) - min(counts) <= 1


def previous_of(result: TaskAssignment, stateful: list[str], threads: dict[str, int]) -> dict[str, ClientState]:
    """Every instance caught up on what it held (as after one round of warming up)."""
    return {
        c: ClientState(
            threads[c],
            frozenset(a.active),
            frozenset(a.standby | a.warmup),
            {t: 0 for t in a.active | a.standby | a.warmup if t in stateful},
        )
        for c, a in result.clients.items()
    }


def test_stickiness_a_settled_assignment_is_kept_and_a_join_moves_only_what_balance_needs() -> None:
    rng = random.Random(16)
    for _ in range(200):
        all_tasks, stateful, clients, config = random_membership(rng)
        threads = {c: s.threads for c, s in clients.items()}
        result = assign(all_tasks, stateful, caught_up_everywhere(clients, stateful), config)
        # Each instance is then caught up exactly on what it holds; the assignment settles (warm-ups
        # finish) and, once settled, assigning again changes nothing, so no task stops anywhere.
        for _ in range(len(stateful) + 2):
            again = assign(all_tasks, stateful, previous_of(result, stateful, threads), config)
            if table(again) == table(result):
                break
            result = again
        assert table(again) == table(result)
        assert not result.probing_rebalance_needed
        # A new instance, caught up everywhere (e.g. empty changelogs): only moves to it, just enough.
        joined = {**previous_of(result, stateful, threads), "new": ClientState(1, lags=lags(stateful, 0))}
        after = assign(all_tasks, stateful, joined, config)
        moved = [t for t in stateful if result.owner(t) != after.owner(t)]
        assert all(after.owner(t) == "new" for t in moved), moved
        assert len(moved) == len(after.clients["new"].active & set(stateful))


def test_convergence_through_warmups_after_adding_and_removing_instances() -> None:
    """As Kafka Streams' TaskAssignorConvergenceTest: an instance holding state is caught up in the next
    round; probing rebalances end, balanced, within stateful/max_warmup + 2 rounds."""
    rng = random.Random(17)
    for _ in range(60):
        all_tasks = tasks(rng.randint(1, 3), rng.randint(2, 8))
        stateful = [t for t in all_tasks if rng.random() < 0.8]
        config = AssignorConfig(rng.randint(0, 1), rng.randint(1, 3), 0)
        names = [f"i{n}" for n in range(rng.randint(1, 4))]
        threads = dict.fromkeys(names, 1)
        state: dict[str, ClientState] = {c: ClientState(1, lags=lags(stateful, 0)) for c in names}
        result = assign(all_tasks, stateful, state, config)
        for change in ("add", "drop"):
            if change == "add":
                threads["new"] = 1
                state = {**previous_of(result, stateful, threads), "new": ClientState(1)}
            else:
                gone = rng.choice(sorted(threads))
                del threads[gone]
                state = {c: s for c, s in previous_of(result, stateful, {**threads, gone: 1}).items() if c != gone}
            limit = len(stateful) // config.max_warmup_replicas + 2
            for _ in range(limit):
                result = assign(all_tasks, stateful, state, config)
                check_valid(result, all_tasks, stateful, state, config)
                if not result.probing_rebalance_needed:
                    break
                state = previous_of(result, stateful, threads)
            assert not result.probing_rebalance_needed, f"no convergence within {limit} rounds"
            counts = [len(a.active & set(stateful)) for a in result.clients.values()]
            assert max(counts) - min(counts) <= 1
