"""JSON strings in canonical schema text: Jackson's escapes, and a lone surrogate written as an escape.

Avro's ``Schema.toString`` and Confluent's JSON Schema canonical form are Jackson output, which escapes only
``"``, ``\\`` and control characters (``\\n`` style where one exists, else ``\\u00XX`` upper-case); non-ASCII
and ``/`` are written as they are. One case Jackson prints as it is cannot be stored by us: a lone UTF-16
surrogate (``"\\ud800"`` in the schema text, which Confluent's Java parser accepts). Java keeps it in the
string and its UTF-8 encoder turns it into ``?`` when hashing, so two different schemas share an identity
hash there. Written as the escape ``\\uD800`` (Jackson's upper-case hex) it is plain ASCII: the canonical
text encodes to UTF-8, its digest is its own, a client parsing it gets back the same lone surrogate, and
registering the same text again finds it. Surrogate pairs never reach here as two code units: a JSON parser
joins ``"\\ud83d\\ude00"`` into one character.
"""

from __future__ import annotations

import re

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


def _escape_char(m: re.Match[str]) -> str:
    c = m.group(0)
    return _ESCAPES.get(c) or f"\\u{ord(c):04X}"


def jstr(s: str) -> str:
    """``s`` as a JSON string, written as Jackson writes it (lone surrogates escaped, see the module)."""
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, s) + '"'
