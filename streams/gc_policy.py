"""The interpreter's garbage collection, set for a stream processor's long-lived state.

A running application holds its state (window and suppression-buffer entries, object caches, uncommitted
changes) in many long-lived Python objects, and creates new long-lived ones all the time (each new window,
each buffered key). With CPython's default thresholds a full collection, which walks every one of them,
then runs every few hundred thousand allocations: in the windowed benchmarks full collections took about a
quarter of the processing time. Starting an application raises the oldest generation's threshold a
hundredfold, so a full collection runs at most once per 1,000 middle-generation collections (about 7 million
net allocations); the young generations, where most garbage, cyclic or not, dies, are collected as before.
Only the interpreter's default thresholds are replaced: an application that set its own keeps them.

A query server also freezes the objects alive once it has started (``freeze_long_lived``), so that no
full collection walks them while lookups wait.
"""

from __future__ import annotations

import gc
import logging

__all__ = ["STREAMS_THRESHOLDS", "freeze_long_lived", "relax_full_collections", "thaw_long_lived"]

log = logging.getLogger("streams.gc")

_INTERPRETER_DEFAULTS = (700, 10, 10)
STREAMS_THRESHOLDS = (700, 10, 1000)


def relax_full_collections() -> bool:
    """Set ``STREAMS_THRESHOLDS`` if the thresholds are the interpreter's defaults; True if it did."""
    if gc.get_threshold() != _INTERPRETER_DEFAULTS:
        return False
    gc.set_threshold(*STREAMS_THRESHOLDS)
    log.info(
        "garbage collection thresholds %s -> %s: full collections run less often over the streams state",
        _INTERPRETER_DEFAULTS,
        STREAMS_THRESHOLDS,
    )
    return True


def freeze_long_lived() -> int:
    """Collect, then move every object alive now out of the collector's sight (``gc.freeze``); returns how
    many. For a server that answers with low latency: a full collection walks every object of the process
    (modules, FastAPI, pydantic, the topology: tens of ms with the GIL held), stalling every request in flight,
    while the objects alive after start-up stay for good."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def thaw_long_lived() -> None:
    """Undo ``freeze_long_lived``: some frozen objects may be garbage by now (e.g. another app closed)."""
    gc.unfreeze()
