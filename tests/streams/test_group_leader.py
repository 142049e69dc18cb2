"""The group leader's protocol as pure logic, on a hand-driven clock: liveness, lock-step generations,
cooperative hand-over in two steps, re-publishing lost tasks, probing while warm-ups catch up."""

from __future__ import annotations

from streams.assignor import AssignorConfig
from streams.group_leader import Assignment, GroupLeader, MemberAssignment, MemberStatus
from streams.membership import decode_assignment, decode_status, encode_assignment, encode_status

TASKS = ["0_0", "0_1", "0_2", "0_3"]
SESSION = 2.0


class Member:
    """A member that applies whatever it is given at once and says so."""

    def __init__(self, name: str, incarnation: str = "i1") -> None:
        self.name = name
        self.incarnation = incarnation
        self.heartbeat = 0
        self.generation = -1
        self.active: list[str] = []
        self.replicas: list[str] = []
        self.positions: dict[str, int] = {}

    def status(self) -> MemberStatus:
        self.heartbeat += 1
        return MemberStatus(
            self.name,
            self.incarnation,
            f"http://{self.name}:7070",
            1,
            self.heartbeat,
            self.generation,
            list(self.active),
            list(self.replicas),
            dict(self.positions),
        )

    def apply(self, assignment: Assignment) -> None:
        mine = assignment.of(self.name, self.incarnation)
        self.generation = assignment.generation
        self.active = list(mine.active) if mine else []
        self.replicas = (mine.standby + mine.warmup) if mine else []


def leader(*members: Member, now: float = 0.0, current: Assignment | None = None, **config: int) -> GroupLeader:
    statuses = {m.name: m.status() for m in members}
    return GroupLeader(
        "a",
        TASKS,
        set(TASKS),
        AssignorConfig(**config),
        SESSION,
        probing_interval=5.0,
        current=current or Assignment(0, ""),
        statuses=statuses,
        now=now,
    )


def step(gl: GroupLeader, now: float, *members: Member) -> Assignment | None:
    """One tick; members apply what was published and report."""
    published = gl.tick(now)
    if published is not None:
        gl.published(published)
        for m in members:
            m.apply(published)
    for m in members:
        gl.observe(m.status(), now)
    return published


def actives(a: Assignment) -> dict[str, list[str]]:
    return {name: m.active for name, m in sorted(a.members.items())}


def test_first_assignment_then_nothing_until_something_changes() -> None:
    a, b = Member("a"), Member("b")
    gl = leader(a, b)
    first = step(gl, 0.1, a, b)
    assert first is not None and first.generation == 1 and first.leader == "a"
    assert actives(first) == {"a": ["0_0", "0_1"], "b": ["0_2", "0_3"]}
    assert first.members["b"].server == "http://b:7070"
    assert step(gl, 0.2, a, b) is None
    assert step(gl, 0.3, a, b) is None


def test_a_task_changes_hands_in_two_generations() -> None:
    a, b, c = Member("a"), Member("b"), Member("c")
    gl = leader(a, b)
    step(gl, 0.1, a, b)
    gl.observe(c.status(), 0.2)  # c joins; empty changelogs, so everybody is caught up
    revoke = step(gl, 0.3, a, b, c)
    assert revoke is not None and revoke.generation == 2
    # The task that moves is nobody's active in between; its new owner tails it meanwhile.
    assert actives(revoke) == {"a": ["0_0", "0_1"], "b": ["0_2"], "c": []}
    assert revoke.members["c"].standby == ["0_3"]
    give = step(gl, 0.4, a, b, c)
    assert give is not None and give.generation == 3
    assert actives(give) == {"a": ["0_0", "0_1"], "b": ["0_2"], "c": ["0_3"]}
    assert step(gl, 0.5, a, b, c) is None


def test_lock_step_waits_for_every_member_to_apply_the_current_generation() -> None:
    a, b, c = Member("a"), Member("b"), Member("c")
    gl = leader(a, b)
    step(gl, 0.1, a, b)
    gl.observe(c.status(), 0.2)
    revoke = gl.tick(0.3)
    assert revoke is not None
    gl.published(revoke)
    a.apply(revoke)
    c.apply(revoke)  # b has not applied it yet: it may still run 0_3
    for m in (a, b, c):
        gl.observe(m.status(), 0.4)
    assert gl.waiting_for() == ["b"]
    assert gl.tick(0.5) is None
    b.apply(revoke)
    gl.observe(b.status(), 0.6)
    assert actives(gl.tick(0.7) or revoke)["c"] == ["0_3"]


def test_a_silent_member_is_presumed_dead_after_the_session_timeout_and_its_tasks_move_at_once() -> None:
    a, b = Member("a"), Member("b")
    gl = leader(a, b)
    step(gl, 0.1, a, b)
    for t in (0.5, 1.0, 1.5, 2.0):
        assert step(gl, t, a) is None  # b stays silent, still within its session
    moved = step(gl, 2.2, a)
    assert moved is not None and actives(moved) == {"a": TASKS}  # no two-step: b is gone


def test_a_new_leader_presumes_the_previous_leader_dead() -> None:
    """The lease moves only when its holder was silent for the session timeout or left."""
    a, b = Member("a"), Member("b")
    current = Assignment(
        7, "b", {"a": MemberAssignment("i1", None, ["0_0", "0_1"]), "b": MemberAssignment("i1", None, ["0_2", "0_3"])}
    )
    a.apply(current)
    b.apply(current)
    gl = leader(a, b, current=current)
    taken = step(gl, 0.1, a)
    assert taken is not None and taken.generation == 8 and actives(taken) == {"a": TASKS}


def test_a_lost_task_is_published_again_under_a_new_number() -> None:
    a, b = Member("a"), Member("b")
    gl = leader(a, b)
    first = step(gl, 0.1, a, b)
    assert first is not None
    b.active.remove("0_3")  # fenced or failed to commit: closed without committing
    gl.observe(b.status(), 0.2)
    again = step(gl, 0.3, a, b)
    assert again is not None and again.generation == 2 and again.members == first.members


def test_a_restarted_instance_is_a_newcomer() -> None:
    a, b = Member("a"), Member("b")
    gl = leader(a, b)
    step(gl, 0.1, a, b)
    restarted = Member("b", incarnation="i2")  # same instance id, new process: runs nothing yet
    gl.observe(restarted.status(), 0.2)
    assert gl.waiting_for() == []
    again = step(gl, 0.3, a, restarted)
    assert again is not None and again.members["b"].incarnation == "i2"
    assert actives(again) == {"a": ["0_0", "0_1"], "b": ["0_2", "0_3"]}


def test_warmups_are_probed_every_interval_until_caught_up() -> None:
    a, b = Member("a"), Member("b")
    a.positions = dict.fromkeys(TASKS, 1000)
    gl = leader(a, now=0.0, acceptable_recovery_lag=100, max_warmup_replicas=1)
    step(gl, 0.1, a)
    gl.observe(b.status(), 0.2)
    warm = step(gl, 0.3, a, b)
    assert warm is not None and actives(warm) == {"a": TASKS, "b": []} and warm.members["b"].warmup == ["0_2"]
    b.positions = {"0_2": 950}  # caught up (within 100 records), but nobody looks before the probe
    for t in (1.5, 3.0, 4.5):
        assert step(gl, t, a, b) is None
    revoke = step(gl, 5.4, a, b)  # the probing interval (5 s) has passed
    assert revoke is not None and actives(revoke) == {"a": ["0_0", "0_1", "0_3"], "b": []}
    assert revoke.members["b"].standby == ["0_2"]


def test_records_round_trip() -> None:
    status = Member("a").status()
    assert decode_status(encode_status(status)) == status
    assignment = Assignment(3, "a", {"a": MemberAssignment("i1", "http://a", ["0_0"], ["0_1"], ["0_2"])})
    assert decode_assignment(encode_assignment(assignment)) == assignment
    assert decode_status(b"{not json") is None
    assert decode_assignment(b'{"generation": 1}') is None
