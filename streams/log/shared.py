"""``SharedByName``: objects that every user naming the same name shares, made by the first and closed by the
last. The SQLite backend's named in-memory databases are such objects, and so are the registry's in-process
instances (``registry/embedded.py``, ``mock://name``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["SharedByName"]

T = TypeVar("T")


class SharedByName(Generic[T]):
    """``claim(name)`` gives the object of that name, made with ``make(name)`` when no user holds one; ``""``
    makes a private one every time. Each claim is ended by one ``release``; the last one closes the object with
    ``close`` (outside the lock, so a slow close holds up no other name)."""

    def __init__(self, make: Callable[[str], T], close: Callable[[T], None]) -> None:
        self._make = make
        self._close = close
        self._lock = threading.Lock()
        self._named: dict[str, T] = {}
        self._names: dict[int, str] = {}  # id(object) -> its name
        self._users: dict[int, int] = {}  # id(object) -> its claims not yet released

    def claim(self, name: str) -> T:
        with self._lock:
            shared = self._named.get(name) if name else None
            if shared is None:
                shared = self._make(name)
                if name:
                    self._named[name] = shared
                self._names[id(shared)] = name
            self._users[id(shared)] = self._users.get(id(shared), 0) + 1
            return shared

    def names(self) -> set[str]:
        """The names whose object is held now."""
        with self._lock:
            return set(self._named)

    def claim_again(self, shared: T) -> T:
        """One more claim on an object its caller holds a claim on already."""
        with self._lock:
            self._users[id(shared)] += 1
            return shared

    def release(self, shared: T) -> None:
        with self._lock:
            key = id(shared)
            self._users[key] -= 1
            if self._users[key] > 0:
                return
            del self._users[key]
            name = self._names.pop(key)
            if name:
                del self._named[name]
        self._close(shared)
