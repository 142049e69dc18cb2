"""What the diff tests of the compatibility modules assert (``test_json_schema_diff.py``, ``test_protobuf_diff.py``)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from compat import Incompatibility


def assert_diff_case(
    rules: ModuleType,
    is_compatible_change: Callable[[str], bool],
    old: Any,
    new: Any,
    changes: list[str],
    compatible: bool,
) -> None:
    """``rules.diff(old, new)`` reports exactly ``changes`` (``"<KIND> <path>"``, in any order); ``rules.check`` with
    ``new`` as reader finds ``new`` compatible or not, reporting exactly the changes outside the compatible kinds,
    each with its message."""
    found = [f"{d.kind} {d.path}" for d in rules.diff(old, new)]
    assert sorted(found) == sorted(changes)
    incompatibilities = rules.check(reader=new, writer=old)
    assert (incompatibilities == []) is compatible
    expected = sorted(c for c in changes if not is_compatible_change(c.split()[0]))
    assert sorted(f"{d.kind} {d.path}" for d in incompatibilities) == expected
    assert all(d.message for d in incompatibilities)


def assert_reported_as(incompatibilities: list[Incompatibility], confluent_text: str, forward_message: str) -> None:
    """One incompatibility, in Confluent's words as a backward check prints it, and as its forward twin says it."""
    [found] = incompatibilities
    assert found.confluent_text() == confluent_text
    assert found.for_forward().message == forward_message
