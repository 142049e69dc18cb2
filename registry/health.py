"""Liveness and readiness of one registry instance: the one place every part reports to.

A part that finds the instance cannot serve correctly reports a *condition* by name with a reason; the
condition holds until the part clears it. Two kinds:

- **not ready** (``set_not_ready``): answers would be wrong or incomplete for now, e.g. the log is still being
  replayed, no leader is known, the reader fell behind. Load balancers stop sending requests
  (``/health/ready`` answers 503); the process is fine and will recover by itself.
- **unhealthy** (``set_unhealthy``): the instance will not recover without a restart, e.g. a reader thread
  that gave up. ``/health/live`` answers 503, so an orchestrator restarts it; Karapace's ``/_health`` reports
  ``"healthy": false``. An unhealthy instance is also not ready.

Conditions can also be *checks*, asked when someone looks (``add_check``): a callable that returns the
reason, or None when all is well (e.g. "is a leader known?").

Every method may be called from any thread (reader threads report from their own); the reads are
single dict operations.

``serving`` is separate: whether the state may be read at all. It is False while the startup replay applies
the log in a worker thread; until then only the operations endpoints answer, and the API answers 503.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: condition names used by the registry itself (others add their own)
REPLAY = "replay"
LEADER = "leader"
SHUTDOWN = "shutdown"
READER = "reader"


class Health:
    def __init__(self) -> None:
        self.started_at = time.monotonic()
        #: the state has replayed the log and may be read (the API answers)
        self.serving = False
        #: seconds the startup replay took (None until it is done)
        self.replay_seconds: float | None = None
        self._not_ready: dict[str, str] = {}
        self._unhealthy: dict[str, str] = {}
        self._checks: dict[str, Callable[[], str | None]] = {}

    # ---- reporting -------------------------------------------------------------------------------------

    def set_not_ready(self, condition: str, reason: str) -> None:
        self._not_ready[condition] = reason

    def set_unhealthy(self, condition: str, reason: str) -> None:
        self._unhealthy[condition] = reason

    def clear(self, condition: str) -> None:
        """The condition no longer holds (either kind)."""
        self._not_ready.pop(condition, None)
        self._unhealthy.pop(condition, None)

    def add_check(self, condition: str, check: Callable[[], str | None]) -> None:
        """A readiness condition evaluated when asked: ``check()`` returns why not ready, or None."""
        self._checks[condition] = check

    # ---- asking ----------------------------------------------------------------------------------------

    def unhealthy(self) -> dict[str, str]:
        """Condition -> reason, for every condition that needs a restart (empty: alive)."""
        return dict(self._unhealthy)

    def not_ready(self) -> dict[str, str]:
        """Condition -> reason, for everything that keeps the instance from being ready (empty: ready)."""
        problems = {**self._not_ready, **self._unhealthy}
        for name, check in list(self._checks.items()):
            reason = check()
            if reason is not None:
                problems[name] = reason
        return problems

    @property
    def live(self) -> bool:
        return not self._unhealthy

    @property
    def ready(self) -> bool:
        return not self.not_ready()
