"""Waiting for a condition in a test: the suite's one deadline loop.

``poll_until(fetch, accept)`` calls ``fetch`` until ``accept`` holds for its value and returns that value;
``wait_for(predicate)`` is the common case, waiting for a truthy value; ``wait_for_async`` is ``wait_for``
for a test running on an event loop (it sleeps with ``asyncio.sleep``, so the loop keeps working while it
waits). Each evaluates at least once, and once more after the deadline has passed (a check that holds by
then passes on a slow machine), and fails with an ``AssertionError`` naming what was awaited, for how long,
and the last value (or ignored error) seen.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_NOTHING = object()


class _Attempts(Generic[T]):
    """One poll's state: each call fetches once and says whether the value was accepted (kept in ``value``);
    a call after the deadline that is not accepted raises."""

    def __init__(
        self,
        fetch: Callable[[], T],
        accept: Callable[[T], object],
        timeout: float,
        what: str,
        ignoring: tuple[type[BaseException], ...],
    ) -> None:
        self._fetch = fetch
        self._accept = accept
        self._timeout = timeout
        self._what = what
        self._ignoring = ignoring
        self._deadline = time.monotonic() + timeout
        self._last: object = _NOTHING
        self.value: T

    def __call__(self) -> bool:
        try:
            value = self._fetch()
        except self._ignoring as exc:
            self._last = exc
        else:
            if self._accept(value):
                self.value = value
                return True
            self._last = value
        if time.monotonic() >= self._deadline:
            seen = "nothing" if self._last is _NOTHING else repr(self._last)
            raise AssertionError(f"timed out after {self._timeout}s waiting for {self._what}; last seen: {seen}")
        return False


def poll_until(
    fetch: Callable[[], T],
    accept: Callable[[T], object] = bool,
    *,
    timeout: float = 60.0,
    interval: float = 0.05,
    what: str = "the condition",
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """The first value of ``fetch()`` that ``accept`` holds for, polling every ``interval`` seconds.

    Exceptions of the types in ``ignoring`` raised by ``fetch`` count as "not yet" (a server that does not
    listen yet); any other exception, from ``fetch`` or ``accept``, ends the wait at once.
    """
    attempt = _Attempts(fetch, accept, timeout, what, ignoring)
    while not attempt():
        time.sleep(interval)
    return attempt.value


def wait_for(
    predicate: Callable[[], T],
    timeout: float = 60.0,
    *,
    interval: float = 0.05,
    what: str = "the condition",
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """The first truthy value of ``predicate()``; see ``poll_until``."""
    return poll_until(predicate, bool, timeout=timeout, interval=interval, what=what, ignoring=ignoring)


async def wait_for_async(
    predicate: Callable[[], T], timeout: float = 60.0, *, interval: float = 0.02, what: str = "the condition"
) -> T:
    """``wait_for`` on an event loop: the loop runs other work between attempts."""
    attempt = _Attempts(predicate, bool, timeout, what, ())
    while not attempt():
        await asyncio.sleep(interval)
    return attempt.value
