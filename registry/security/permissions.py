"""Permissions: who may do what on which resource, with Karapace's semantics.

A rule grants ``Read`` or ``Write`` on the resources its ``resource`` regular expression matches, to a principal
(``username``) or to everyone holding a role (``role``). Resources are strings:

- ``Subject:<name>`` a subject (its versions, config, mode, compatibility checks);
- ``Config:`` the global compatibility config (reading the global mode too, as in Karapace);
- ``Mode:`` changing the global mode (READWRITE, READONLY, IMPORT);
- ``Import:`` registering with a chosen id (IMPORT mode);
- ``Exporter:`` schema exporters (``/exporters``): every route needs ``Write`` on it, reads too, since an
  exporter's config holds the destination's credentials (Confluent asks for its global admin role).
- ``Kek:<name>`` a KEK of the DEK registry and the DEKs under it (``Read`` to read them, ``Write`` to create,
  change, delete or undelete them).

As in Karapace: ``Write`` implies ``Read``; a rule matches when its expression matches at the start of the
resource (Python's ``re.match``, so ``Subject:orders`` also covers ``Subject:orders-value``; end it with ``$``
for one subject), and nothing is allowed that no rule grants. Expressions run on RE2 (linear time), so a
permissions file is never a ReDoS vector; an expression RE2 cannot run (look-around, back-references) is
refused when the file is loaded.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import re2

from registry.security.principal import Principal

CONFIG = "Config:"
MODE = "Mode:"
IMPORT = "Import:"
EXPORTER = "Exporter:"
_MEMO_LIMIT = 100_000

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False


class Operation(enum.Enum):
    READ = "Read"
    WRITE = "Write"


def subject_resource(subject: str) -> str:
    return f"Subject:{subject}"


def kek_resource(name: str) -> str:
    return f"Kek:{name}"


def compile_resource(expression: str) -> re2._Regexp:
    """The RE2 program of a rule's resource expression; ValueError says why RE2 refuses it."""
    try:
        return re2.compile(expression, options=_OPTIONS)
    except re2.error as e:
        detail = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
        raise ValueError(f"invalid or unsupported regular expression {expression!r}: {detail}") from None


@dataclass(frozen=True, slots=True)
class Rule:
    """``operation`` on what ``resource`` matches, for the principal named ``username`` or holders of ``role``."""

    operation: Operation
    resource: str
    username: str | None = None
    role: str | None = None
    program: re2._Regexp = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "program", compile_resource(self.resource))

    def applies_to(self, principal: Principal) -> bool:
        if self.username is not None:
            return self.username == principal.name
        return self.role is not None and self.role in principal.roles

    def grants(self, operation: Operation) -> bool:
        return operation is Operation.READ or self.operation is Operation.WRITE

    def matches(self, resource: str) -> bool:
        return self.program.match(resource) is not None


class Authorizer:
    """Answers "may this principal do this?"; ``rules=None`` means no permissions are configured, and every
    authenticated principal may do everything. Answers are memoized until the rules change (``generation``)."""

    def __init__(self, rules: Sequence[Rule] | None = None) -> None:
        self._rules: tuple[Rule, ...] | None = None if rules is None else tuple(rules)
        self._memo: dict[tuple[str, frozenset[str], bool, str], bool] = {}
        #: bumped whenever the rules change: a decision made before may no longer hold
        self.generation = 0

    @property
    def enforcing(self) -> bool:
        return self._rules is not None

    def set_rules(self, rules: Sequence[Rule] | None) -> None:
        self._rules = None if rules is None else tuple(rules)
        self._memo = {}
        self.generation += 1

    def allows(self, principal: Principal, operation: Operation, resource: str) -> bool:
        if self._rules is None:
            return True
        # keyed on plain values: the dataclass's and the enum's hashes are Python calls, and this runs on
        # every cached read
        key = (principal.name, principal.roles, operation is Operation.WRITE, resource)
        memo = self._memo
        found = memo.get(key)
        if found is None:
            found = any(r.applies_to(principal) and r.grants(operation) and r.matches(resource) for r in self._rules)
            if len(memo) >= _MEMO_LIMIT:
                memo.clear()
            memo[key] = found
        return found

    def allows_any(self, principal: Principal, operation: Operation, resources: Iterable[str]) -> bool:
        return any(self.allows(principal, operation, r) for r in resources)
