"""The interpreter's garbage collection, tuned for a stream processor's long-lived state: what
``StreamsApp(gc_tuning=True)`` (the default) does while the app runs.

A running application holds its state (window and suppression-buffer entries, object caches, uncommitted
changes) in many long-lived Python objects, and creates new long-lived ones all the time (each new window,
each buffered key). With CPython's default thresholds a full collection, which walks every one of them,
then runs every few hundred thousand allocations: in the windowed benchmarks full collections took about a
quarter of the processing time. Starting an application raises the oldest generation's threshold a
hundredfold, so a full collection runs at most once per 1,000 middle-generation collections (about 7 million
net allocations); the young generations, where most garbage, cyclic or not, dies, are collected as before.
Only the interpreter's default thresholds are replaced: an application that set its own keeps them.

An app with a query server also freezes the objects alive once the server has started (``gc.freeze``), so
that no full collection walks them while lookups wait.

Both settings are the process's, so apps share them: the first app to start makes each change and the last
one to close undoes it. The thresholds go back to the defaults unless something else changed them
meanwhile. ``gc.unfreeze()`` thaws every frozen object, the user's own too, so the frozen objects are thawed
only if nothing else was frozen before our first freeze nor since; otherwise they stay frozen (what of them
becomes garbage is then never collected). "Since" is told by a sentinel object made right after each of our
freezes: anyone's later ``gc.freeze()`` freezes it too. (The freeze count cannot tell: frozen objects that die
leave it, so it can fall below its value after our freeze although the user froze more.)
"""

from __future__ import annotations

import gc
import logging
import threading
from dataclasses import dataclass

__all__ = ["STREAMS_THRESHOLDS", "GcTuning"]

log = logging.getLogger("streams.gc")

_INTERPRETER_DEFAULTS = (700, 10, 10)
STREAMS_THRESHOLDS = (700, 10, 1000)


@dataclass
class _ProcessTuning:
    """What the apps of this process changed, and how many of them hold each change."""

    threshold_holders: int = 0
    thresholds_set: bool = False  # we replaced the interpreter's defaults
    freeze_holders: int = 0
    thaw_allowed: bool = False  # nothing but our freezes is frozen
    # made right after our newest freeze, so only a later freeze (someone else's) can freeze it
    sentinel: list[object] | None = None


def _frozen(obj: object) -> bool:
    """Whether a tracked object is frozen: it is then in none of the collector's generations. Walks every
    tracked object, which is why it runs only when an app starts its query server or closes."""
    return not any(o is obj for o in gc.get_objects())


_lock = threading.Lock()
_process = _ProcessTuning()


class GcTuning:
    """One app's hold on the process's garbage-collector tuning; does nothing when not ``enabled``. Each
    change is made once per app and undone by ``release()``, which may be called any number of times."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._holds_thresholds = False
        self._holds_freeze = False

    def relax_full_collections(self) -> bool:
        """Set ``STREAMS_THRESHOLDS`` if the thresholds are the interpreter's defaults; True if it did."""
        if not self.enabled or self._holds_thresholds:
            return False
        with _lock:
            self._holds_thresholds = True
            _process.threshold_holders += 1
            if _process.threshold_holders > 1 or gc.get_threshold() != _INTERPRETER_DEFAULTS:
                return False
            gc.set_threshold(*STREAMS_THRESHOLDS)
            _process.thresholds_set = True
        log.info(
            "garbage collection thresholds %s -> %s: full collections run less often over the streams state",
            _INTERPRETER_DEFAULTS,
            STREAMS_THRESHOLDS,
        )
        return True

    def freeze_long_lived(self) -> int:
        """Collect, then move every object alive now out of the collector's sight (``gc.freeze``); returns how
        many objects are frozen (0 when not enabled). For a server that answers with low latency: a full
        collection walks every object of the process (modules, FastAPI, pydantic, the topology: tens of ms
        with the GIL held), stalling every request in flight, while the objects alive after start-up stay for
        good."""
        if not self.enabled:
            return 0
        with _lock:
            if _process.freeze_holders == 0:
                _process.thaw_allowed = gc.get_freeze_count() == 0
            elif _process.sentinel is not None and _frozen(_process.sentinel):
                _process.thaw_allowed = False  # someone else froze objects since our newest freeze
            gc.collect()
            gc.freeze()
            frozen = gc.get_freeze_count()
            _process.sentinel = []
            if not self._holds_freeze:
                self._holds_freeze = True
                _process.freeze_holders += 1
        log.info("%d objects frozen out of the garbage collector", frozen)
        return frozen

    def release(self) -> None:
        """Undo this app's share: the last app to release thaws what was frozen (if only we froze) and puts
        back the thresholds (if they are still ours)."""
        with _lock:
            if self._holds_freeze:
                self._holds_freeze = False
                _process.freeze_holders -= 1
                # some frozen objects may be garbage by now (e.g. this app's): thawing lets them be collected
                if _process.freeze_holders == 0:
                    sentinel, _process.sentinel = _process.sentinel, None
                    if _process.thaw_allowed and not (sentinel is not None and _frozen(sentinel)):
                        gc.unfreeze()
            if self._holds_thresholds:
                self._holds_thresholds = False
                _process.threshold_holders -= 1
                if _process.threshold_holders == 0 and _process.thresholds_set:
                    _process.thresholds_set = False
                    if gc.get_threshold() == STREAMS_THRESHOLDS:
                        gc.set_threshold(*_INTERPRETER_DEFAULTS)
