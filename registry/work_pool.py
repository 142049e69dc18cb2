"""The bounded pool where schema work runs: parsing, normalizing, rendering formats, compatibility checks.

That work is CPU-bound and its cost is chosen by the client (a big schema, a check near its bounds), so it
never runs on the event loop, which keeps answering reads meanwhile. The pool has a few threads and a
bounded queue; when both are full, new work is refused at once with 503 and ``Retry-After`` (clients retry
with back-off) instead of piling up requests and their bodies in memory.

The count of work items is kept on the event loop and released when the work itself ends, not when its
caller stops waiting: a client that disconnects does not free a place while its work still runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from registry import errors

log = logging.getLogger(__name__)
T = TypeVar("T")


class WorkPool:
    """``await pool.run(fn, *args)`` runs ``fn(*args)`` in one of ``workers`` threads, or raises the 503
    ``ApiError`` when ``workers + queue`` items are already in the pool. Used from the event loop only."""

    def __init__(self, workers: int, queue: int) -> None:
        if workers < 1 or queue < 0:
            raise ValueError(f"a work pool needs at least 1 worker and a queue >= 0, got {workers}, {queue}")
        self.workers = workers
        self.capacity = workers + queue
        self.in_pool = 0  # running or waiting
        self.refused = 0
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="schema-work")

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        if self.in_pool >= self.capacity:
            self.refused += 1
            raise errors.overloaded(
                f"Too much schema work in progress ({self.in_pool} parses or compatibility checks running or "
                f"queued, the limit set by --schema-workers and --schema-queue); retry shortly"
            )
        loop = asyncio.get_running_loop()
        self.in_pool += 1
        future: Future[T] = self._executor.submit(fn, *args)

        def done(_: Future[T]) -> None:
            try:
                loop.call_soon_threadsafe(self._release)
            except RuntimeError:  # the loop is closed: the server has stopped
                pass

        future.add_done_callback(done)
        return await asyncio.wrap_future(future)

    def _release(self) -> None:
        self.in_pool -= 1

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
