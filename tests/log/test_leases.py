"""Contract: ``Log.lease`` gives a name to one holder at a time, and to another once the holder lets go."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from streams.log import Lease, Log, open_log
from tests.support.waiting import wait_for


def poll_leases_until(leases: list[Lease], predicate: Callable[[], bool], timeout: float) -> None:
    def polled() -> bool:
        for lease in leases:
            lease.poll()
        return predicate()

    wait_for(polled, timeout, what=f"leases {[x.holder for x in leases]} to get there")


def test_one_holder_at_a_time_and_a_release_hands_it_over(log: Log, unique: Callable[[str], str]) -> None:
    assert log.capabilities.leases
    name = unique("lease")
    first = log.lease(name, "first", timeout=2.0)
    second = log.lease(name, "second", timeout=2.0)
    try:
        poll_leases_until([first, second], lambda: first.held or second.held, 30)
        holder, other = (first, second) if first.held else (second, first)
        for _ in range(20):  # it stays put while the holder keeps polling
            assert holder.poll() and not other.poll()
            time.sleep(0.02)
        assert holder.timeout > 0
        holder.close()
        assert not holder.held and not holder.poll()
        poll_leases_until([other], lambda: other.held, 30)
    finally:
        first.close()
        second.close()


def test_sqlite_a_silent_holder_loses_the_lease_after_the_timeout(tmp_path: Path) -> None:
    """A process that stops (SIGSTOP, a long pause) stops renewing: its lease expires, another process
    takes it, and the old holder knows it has lost it before it even polls again."""
    url = f"sqlite:///{tmp_path / 'log'}"
    with open_log(url) as one, open_log(url) as two:
        silent = one.lease("app-leader", "silent", timeout=0.5)
        waiting = two.lease("app-leader", "waiting", timeout=0.5)
        assert silent.poll() and not waiting.poll()
        time.sleep(0.7)
        assert not silent.held  # expired locally: no poll needed to know
        assert waiting.poll() and waiting.held
        assert not silent.poll()
        silent.close()
        assert waiting.poll()  # closing a lost lease releases nothing of the new holder's
        waiting.close()


def test_sqlite_lease_arguments_are_checked(tmp_path: Path) -> None:
    with open_log(f"sqlite:///{tmp_path / 'log'}") as log, pytest.raises(ValueError, match="timeout must be > 0"):
        log.lease("x", "me", 0)
