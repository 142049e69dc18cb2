"""``ready(value)``: an already-finished coroutine, for the paths of async serializers that await nothing.

An ``async def`` costs CPython a coroutine per call (made, started, finished and freed: ~750 interpreter
instructions, ~60 ns), a tenth of a Protobuf serialize. An async serializer whose common case awaits nothing is a
plain method that returns ``ready(result)`` there and its coroutine otherwise: ``await`` gives the same value,
and ``asyncio.create_task``/``gather`` take it like any coroutine (it has ``send``/``throw``/``close``).

``ready`` is the C type in ``serdes/_ready.c``, compiled when the package is installed where a C compiler is
found; without it, ``ready`` is a coroutine that returns its value (same behaviour, an extra call slower).
``compiled`` says which one this process has.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["compiled", "mark_coroutine_function", "ready"]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


async def _py_ready(value: T) -> T:
    return value


try:
    from serdes._ready import ready
except ImportError:  # installed without a C compiler
    ready = _py_ready

compiled = ready is not _py_ready


def mark_coroutine_function(function: F) -> F:
    """Let ``inspect``/``asyncio.iscoroutinefunction`` see a method that returns a coroutine as an async one."""
    marker = getattr(inspect, "markcoroutinefunction", None)  # Python 3.12+
    if marker is not None:
        return marker(function)
    function._is_coroutine = asyncio.coroutines._is_coroutine  # type: ignore[attr-defined]  # what 3.11 checks
    return function
