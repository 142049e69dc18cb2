"""User-supplied regular expressions (JSON Schema ``patternProperties``), run in linear time.

A pattern comes from a schema anyone may register, and so does the text it is matched against (a property
name). Python's ``re`` backtracks, so ``(a+)+$`` against a long run of ``a`` takes exponential time; RE2
(``google-re2``) runs in time linear in the text and rejects what it cannot run that way (look-around,
back-references). :class:`Patterns` compiles each pattern once per check.

Syntax: JSON Schema patterns are ECMA-262 regular expressions; RE2 reads the same syntax for everything
schemas use in practice, and ``\\uXXXX`` escapes (which RE2 spells ``\\x{XXXX}``) are translated. Like
Java's ``Pattern.find`` (which Confluent uses), a pattern matches anywhere in the name.
"""

from __future__ import annotations

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a rejected pattern is an answer here, not something to print on stderr
_HEX = frozenset("0123456789abcdefABCDEF")


class Patterns:
    """The patterns of one check, compiled on first use. ``search`` answers None for a pattern RE2
    cannot run (or that is not a valid pattern): the caller decides what an unknown answer means."""

    def __init__(self) -> None:
        self._compiled: dict[str, re2._Regexp | None] = {}

    def search(self, pattern: str, text: str) -> bool | None:
        if pattern not in self._compiled:
            self._compiled[pattern] = compile_pattern(pattern)
        compiled = self._compiled[pattern]
        return None if compiled is None else compiled.search(text) is not None


def compile_pattern(pattern: str) -> re2._Regexp | None:
    """The RE2 program for an ECMA-262 pattern, or None when RE2 cannot run it."""
    try:
        return re2.compile(_to_re2(pattern), options=_OPTIONS)
    except re2.error:
        return None


def _to_re2(pattern: str) -> str:
    """``\\uXXXX`` (a UTF-16 surrogate pair as one character) -> ``\\x{XXXX}``; one linear pass."""
    if "\\u" not in pattern:
        return pattern
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        unit = _unit(pattern, i)
        if unit is None:
            out.append(pattern[i : i + 2])  # any other escape (also ``\\\\``) is kept as it is
            i += 2
            continue
        low = _unit(pattern, i + 6) if 0xD800 <= unit < 0xDC00 else None
        if low is not None and 0xDC00 <= low < 0xE000:
            out.append(f"\\x{{{0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00):X}}}")
            i += 12
        else:
            out.append(f"\\x{{{unit:X}}}")
            i += 6
    return "".join(out)


def _unit(pattern: str, i: int) -> int | None:
    """The code unit of a ``\\uXXXX`` escape starting at ``i``, else None."""
    digits = pattern[i + 2 : i + 6]
    if pattern[i : i + 2] == "\\u" and len(digits) == 4 and all(d in _HEX for d in digits):
        return int(digits, 16)
    return None
