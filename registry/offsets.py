"""Waiting until a log has been read up to an offset.

Whoever reads the log moves the offset forward with ``advance``; waiters ask for the offset they need,
async ones on an event loop (``wait``) or blocking ones on other threads (``wait_blocking``). The store
uses this for read-your-writes (a write returns once this node has applied it), the election to know it
has read the election topic up to its own probe and that the store has caught up with ``_schemas``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading


class OffsetWatcher:
    """The last offset read (or applied) from one partition, and waiting for it to reach a target.

    Thread-safe: ``advance`` may run on any thread, and a waiter is woken on its own thread or loop."""

    def __init__(self) -> None:
        self._offset = -1
        self._closed = False
        self._cond = threading.Condition()
        self._futures: list[tuple[int, asyncio.Future[None]]] = []

    @property
    def offset(self) -> int:
        """The last offset read; -1 before the first."""
        return self._offset

    def advance(self, offset: int) -> None:
        """Everything up to ``offset`` has been read; wake whoever waited for it. The offset never goes back."""
        with self._cond:
            if offset <= self._offset:
                return
            self._offset = offset
            self._cond.notify_all()
            ready = [fut for target, fut in self._futures if target <= offset]
            if ready:
                self._futures = [(target, fut) for target, fut in self._futures if target > offset]
        for fut in ready:
            _wake(fut)

    def close(self) -> None:
        """No more offsets will come: wake every waiter now, each answering whether it got its offset."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            futures, self._futures = self._futures, []
        for _, fut in futures:
            _wake(fut)

    async def wait(self, offset: int, timeout: float) -> bool:
        """Wait on the running loop until ``offset`` has been read: True, or False after ``timeout`` seconds
        (or once closed)."""
        with self._cond:
            if self._offset >= offset or self._closed:
                return self._offset >= offset
            entry = (offset, asyncio.get_running_loop().create_future())
            self._futures.append(entry)
        try:
            await asyncio.wait_for(entry[1], timeout)
        except TimeoutError:
            with self._cond, contextlib.suppress(ValueError):
                self._futures.remove(entry)
        return self._offset >= offset

    def wait_blocking(self, offset: int, timeout: float) -> bool:
        """``wait`` for threads: blocks the caller, which must not be the thread that calls ``advance``."""
        with self._cond:
            self._cond.wait_for(lambda: self._offset >= offset or self._closed, timeout)
            return self._offset >= offset


def _wake(fut: asyncio.Future[None]) -> None:
    """Resolve ``fut`` on its own loop: directly when that loop is running here, else thread-safely."""
    loop = fut.get_loop()
    try:
        here = asyncio.get_running_loop() is loop
    except RuntimeError:  # no loop in this thread
        here = False
    if here:
        _resolve(fut)
        return
    try:
        loop.call_soon_threadsafe(_resolve, fut)
    except RuntimeError:  # the loop is closed: nobody is waiting any more
        pass


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():  # a waiter that timed out has cancelled its future
        fut.set_result(None)
