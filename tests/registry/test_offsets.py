"""OffsetWatcher: async and blocking waiters, woken from the loop or from other threads."""

from __future__ import annotations

import asyncio
import threading

from registry.offsets import OffsetWatcher


def test_async_wait_is_woken_by_an_advance_on_the_loop() -> None:
    async def main() -> tuple[bool, bool]:
        w = OffsetWatcher()
        waiting = asyncio.ensure_future(w.wait(5, timeout=5))
        await asyncio.sleep(0)
        w.advance(4)
        await asyncio.sleep(0)
        early = waiting.done()
        w.advance(5)
        return early, await waiting

    assert asyncio.run(main()) == (False, True)


def test_async_wait_is_woken_by_an_advance_from_another_thread() -> None:
    async def main() -> bool:
        w = OffsetWatcher()
        threading.Timer(0.05, w.advance, args=(3,)).start()
        return await w.wait(3, timeout=5)

    assert asyncio.run(main())


def test_async_wait_times_out_and_forgets_the_waiter() -> None:
    async def main() -> tuple[bool, int]:
        w = OffsetWatcher()
        reached = await w.wait(1, timeout=0.01)
        w.advance(1)  # nobody is left to wake
        return reached, len(w._futures)

    assert asyncio.run(main()) == (False, 0)


def test_reached_offsets_answer_at_once() -> None:
    w = OffsetWatcher()
    w.advance(7)
    w.advance(2)  # never goes back
    assert w.offset == 7
    assert w.wait_blocking(7, timeout=0)
    assert asyncio.run(w.wait(6, timeout=0))


def test_blocking_wait_and_close() -> None:
    w = OffsetWatcher()
    threading.Timer(0.05, w.advance, args=(1,)).start()
    assert w.wait_blocking(1, timeout=5)
    assert not w.wait_blocking(2, timeout=0.01)
    threading.Timer(0.05, w.close).start()
    assert not w.wait_blocking(2, timeout=5)  # woken by close, not by the timeout
