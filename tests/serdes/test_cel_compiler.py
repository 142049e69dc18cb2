"""The compiled CEL closures agree with cel-python: on every expression x bindings of a corpus, whenever the closure
answers (it may defer to cel-python with Fallback), cel-python gives the same value, and the closure answers the
common cases itself."""

from __future__ import annotations

import math

import pytest

from serdes.rules.cel import CelProgram
from serdes.rules.cel_compiler import Fallback

pytest.importorskip("celpy")

MESSAGES = [
    {
        "amount": 2.5,
        "qty": 3,
        "name": "alice",
        "ok": True,
        "tags": ["a", "b"],
        "note": None,
        "raw": b"xy",
        "nested": {"x": 1, "s": "in"},
        "neg": -7,
        "big": 2**62,
        "zero": 0,
        "fzero": 0.0,
        "empty": "",
    },
    {
        "amount": -1.0,
        "qty": 0,
        "name": "",
        "ok": False,
        "tags": [],
        "note": "n",
        "raw": b"",
        "nested": {"x": -4, "s": ""},
        "neg": 7,
        "big": -(2**62),
        "zero": 0,
        "fzero": -0.0,
        "empty": "x",
    },
]

EXPRESSIONS = [
    "message.amount > 0.0",
    "message.amount > 0",
    "message.qty > 2",
    "message.qty >= 3 && message.ok",
    "message.qty < 3 || message.name == 'alice'",
    "message.name != ''",
    "message.name + '-x'",
    "message.qty + 1",
    "message.qty - 10",
    "message.qty * message.neg",
    "message.neg / 2",
    "message.neg % 2",
    "message.neg / message.zero",
    "message.amount / message.fzero",
    "message.amount * 2.0",
    "-message.qty",
    "-message.amount",
    "!message.ok",
    "message.ok ? 'yes' : 'no'",
    "message.qty > 2 ? message.qty : 0",
    "size(message.name)",
    "message.name.size()",
    "size(message.tags)",
    "message.name.startsWith('al')",
    "message.name.endsWith('ce')",
    "message.name.contains('lic')",
    "'a' in message.tags",
    "message.qty in [1, 2, 3]",
    "message.nested.x > 0",
    "message.nested.s == 'in'",
    "has(message.nested)",
    "has(message.missing)",
    "message.missing == 1",
    "message.tags[0]",
    "message.tags[5]",
    "message.nested['x']",
    "int(message.amount)",
    "double(message.qty)",
    "string(message.qty)",
    "string(message.amount)",
    "message.big * 4",
    "message.big + message.big",
    "message.qty == 3.0",
    "message.amount == 2",
    "message.note == null",
    "message.raw == b'xy'",
    "size(message.raw)",
    "message.ok == true",
    "message.qty > 0 && message.qty / message.zero > 1",
    "message.qty == 0 || message.qty / message.zero > 1",
    "[message.qty, 2][0]",
    "{'k': message.qty}['k']",
    "message.empty == '' ? 1 : 2",
    "message.name < 'bob'",
    "message.amount <= message.amount",
    "message.name.matches('^a')",
    "message.tags.all(t, t != '')",
    "1u + 2u",
    "message.fzero == 0.0",
]


def _bindings() -> list[dict[str, object]]:
    return [{"message": m} for m in MESSAGES]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_closure_agrees_with_cel_python(expr: str) -> None:
    program = CelProgram(expr)
    for bindings in _bindings():
        try:
            reference = ("value", program.interpret(bindings))
        except Exception as e:
            reference = ("error", type(e).__name__)
        if program.fast is None:
            continue
        try:
            fast = ("value", program.fast(bindings))
        except Fallback:
            continue  # deferred: evaluate() asks cel-python, which is the reference
        assert fast[0] == "value"
        assert reference[0] == "value", f"{expr}: closure answered {fast[1]!r}, cel-python raised {reference[1]}"
        got, want = fast[1], reference[1]
        assert type(got) is type(want), f"{expr}: {got!r} vs {want!r}"
        assert got == want or (isinstance(got, float) and math.isnan(got) and math.isnan(want)), expr
        assert program.evaluate(bindings) == want


def test_common_rule_shapes_compile_and_answer_without_cel_python() -> None:
    shapes = [
        "message.amount > 0.0",
        "message.qty >= 3 && message.ok",
        "message.name + '-x'",
        "size(message.name) > 0",
        "message.nested.s == 'in'",
        "message.name.startsWith('al')",
    ]
    for expr in shapes:
        program = CelProgram(expr)
        assert program.fast is not None, expr
        program.fast({"message": MESSAGES[0]})  # no Fallback


def test_unsupported_forms_are_left_to_cel_python() -> None:
    for expr in ["message.tags.all(t, t != '')", "message.name.matches('^a')", "1u + 2u", "now"]:
        assert CelProgram(expr).fast is None, expr


def test_deferred_cases_give_cel_python_answer_or_error() -> None:
    program = CelProgram("message.qty == 3.0")  # int vs double: no overload in cel-python
    with pytest.raises(Exception, match="overload"):
        program.evaluate({"message": MESSAGES[0]})
    assert CelProgram("message.amount > 0").evaluate({"message": MESSAGES[0]}) is True  # double vs int: allowed
    with pytest.raises(Exception, match="overflow"):
        CelProgram("message.big * 4").evaluate({"message": MESSAGES[0]})


def test_field_bindings() -> None:
    guard, body = CelProgram("typeName == 'STRING'"), CelProgram("value + '-' + name")
    bindings = {"value": "v", "name": "f", "typeName": "STRING", "tags": ["PII"], "fullName": "R.f", "message": {}}
    assert guard.fast is not None and body.fast is not None
    assert guard.evaluate(bindings) is True
    assert body.evaluate(bindings) == "v-f"
