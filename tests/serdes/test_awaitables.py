"""``serdes.awaitables.ready``: the finished coroutine async serializers return on their common path behaves as the
coroutine of an ``async def`` that returns the value, compiled (``serdes/_ready.c``) and in its Python fallback."""

from __future__ import annotations

import asyncio
import collections.abc
import inspect
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from serdes import awaitables

try:
    from serdes._ready import ready as c_ready
except ImportError:  # pragma: no cover - `make install` compiles it; test_the_c_version_is_built says so
    c_ready = None

READIES = [
    pytest.param(awaitables._py_ready, id="python"),
    pytest.param(c_ready, id="c", marks=pytest.mark.skipif(c_ready is None, reason="serdes._ready not built")),
]


def test_the_c_version_is_built_by_the_install() -> None:
    # `make install` compiles serdes/_ready.c (setup.py); the async serializers' figures depend on it
    assert awaitables.compiled and awaitables.ready is c_ready


@pytest.mark.parametrize("ready", READIES)
@pytest.mark.parametrize("value", [b"\x00\x00\x00\x00\x01x", None, (1, 2), [3], ValueError("a value, not raised"), 0])
def test_await_gives_the_value(ready: Callable[[Any], Coroutine[Any, Any, Any]], value: Any) -> None:
    async def main() -> Any:
        return await ready(value)

    assert asyncio.run(main()) is value


@pytest.mark.parametrize("ready", READIES)
def test_asyncio_takes_it_as_a_coroutine(ready: Callable[[Any], Coroutine[Any, Any, Any]]) -> None:
    async def main() -> None:
        unawaited = ready(1)
        assert asyncio.iscoroutine(unawaited) and isinstance(unawaited, collections.abc.Coroutine)
        unawaited.close()
        assert await asyncio.create_task(ready(b"task")) == b"task"
        assert await asyncio.gather(ready(1), ready((2,)), asyncio.sleep(0, 3)) == [1, (2,), 3]
        assert await asyncio.wait_for(ready("w"), 1) == "w"

    asyncio.run(main())


@pytest.mark.parametrize("ready", READIES)
def test_awaited_twice_is_an_error(ready: Callable[[Any], Coroutine[Any, Any, Any]]) -> None:
    async def main() -> None:
        once = ready(1)
        assert await once == 1
        with pytest.raises(RuntimeError, match="cannot reuse already awaited coroutine"):
            await once

    asyncio.run(main())


@pytest.mark.parametrize("ready", READIES)
def test_send_throw_and_close_follow_the_coroutine_protocol(ready: Callable[[Any], Coroutine[Any, Any, Any]]) -> None:
    with pytest.raises(StopIteration) as stop:
        ready((1, 2)).send(None)
    assert stop.value.value == (1, 2)  # a tuple is the value, not StopIteration's arguments
    refused = ready(1)
    with pytest.raises(TypeError, match="can't send non-None value to a just-started coroutine"):
        refused.send(5)
    refused.close()
    thrown = ready(1)
    with pytest.raises(KeyError, match="k"):
        thrown.throw(KeyError("k"))
    with pytest.raises(RuntimeError, match="cannot reuse"):
        thrown.send(None)
    closed = ready(1)
    assert closed.close() is None
    with pytest.raises(RuntimeError, match="cannot reuse"):
        closed.send(None)


def test_marked_methods_count_as_coroutine_functions() -> None:
    class Serializer:
        @awaitables.mark_coroutine_function
        def __call__(self, value: int) -> Coroutine[Any, Any, int]:
            return awaitables.ready(value)

    assert asyncio.iscoroutinefunction(Serializer.__call__)
    if hasattr(inspect, "markcoroutinefunction"):  # Python 3.12+
        assert inspect.iscoroutinefunction(Serializer.__call__)
