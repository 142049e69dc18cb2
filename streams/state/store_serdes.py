"""``StoreSerdes``: what every store class holds of its name and serdes (key-value stores, window and
session stores, the suppression buffer): the serdes bound once to the changelog topic, and the key and value
serialization whose errors name the store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streams.errors import SerdeError
from streams.record_serdes import bind_deserializer, bind_serializer, serde_name

if TYPE_CHECKING:
    from streams.processor import RecordContext

__all__ = ["StoreSerdes"]


class StoreSerdes:
    """A store's name, its serdes bound to ``topic`` (its changelog, which is also what the serdes are bound
    to), and the owning task's record context."""

    #: What error messages call the store.
    _noun = "store"

    def __init__(self, name: str, key_serde: Any, value_serde: Any, topic: str, record_context: RecordContext):
        self.name = name
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.topic = topic
        #: The bound key serializer; it raises the serde's own errors, ``key_bytes`` wraps them in ``SerdeError``.
        self.key_serializer = bind_serializer(key_serde, topic, True)
        self._kde = bind_deserializer(key_serde, topic, True)
        self._vser = bind_serializer(value_serde, topic, False)
        self._vde = bind_deserializer(value_serde, topic, False)
        self._rc = record_context

    def key_bytes(self, key: Any) -> bytes:
        try:
            kb = self.key_serializer(key)
        except Exception as exc:
            raise SerdeError(
                f"{self._noun} {self.name!r}: cannot serialize key {key!r} ({type(key).__name__}) with "
                f"{serde_name(self.key_serde)}: {exc}"
            ) from exc
        if kb is None:
            raise SerdeError(f"{self._noun} {self.name!r}: keys must not be None")
        return kb

    def value_bytes(self, value: Any) -> bytes | None:
        """``value`` serialized (None stays None); a serde's error is wrapped in ``SerdeError`` naming the store,
        the value (cut to 80 characters: values can be large) and the serde."""
        if value is None:
            return None
        try:
            return self._vser(value)
        except Exception as exc:
            raise SerdeError(
                f"{self._noun} {self.name!r}: cannot serialize value {value!r:.80} ({type(value).__name__}) with "
                f"{serde_name(self.value_serde)}: {exc}"
            ) from exc

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
