"""Who is calling: the ``Principal`` every authentication mechanism produces and every check consumes."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller.

    ``name`` is one namespace for every mechanism (a users-file user, a JWT's principal claim, a client
    certificate's subject as an RFC 4514 string), as Kafka's ``User:`` principals are: a permission for
    ``alice`` applies however alice authenticated. ``roles`` come from the users file or the token's roles
    claim. Two principals are equal when name and roles are (the mechanism is only reported).
    """

    name: str
    roles: frozenset[str] = frozenset()
    mechanism: str = field(default="", compare=False)

    def __str__(self) -> str:
        return self.name
