"""Media types: which request bodies the registry takes (415 otherwise) and which answer type an ``Accept``
header gets (406 when none), as Confluent's server declares them.

Shared by the read cache (which answers hits without the framework) and the API routes, so both negotiate
alike. Everything works on raw ASGI header bytes.
"""

from __future__ import annotations

CT_V1 = b"application/vnd.schemaregistry.v1+json"
CT_SR = b"application/vnd.schemaregistry+json"
CT_JSON = b"application/json"
CT_OCTET = b"application/octet-stream"

#: what answers can be, with Confluent's server-side quality (``qs``): the v1 type, then the unversioned
#: vendor type, then plain JSON
PRODUCED: tuple[tuple[bytes, float], ...] = ((CT_V1, 1.0), (CT_SR, 0.9), (CT_JSON, 0.5))
#: request bodies taken (all parsed as JSON; octet-stream is what ad-hoc clients send by default)
CONSUMED = frozenset({CT_V1, CT_SR, CT_JSON, CT_OCTET})

_NEGOTIATED: dict[bytes, bytes | None] = {}  # Accept header -> answer type; clients send a handful of values
_NEGOTIATED_MAX = 1024


def header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    """The first value of a header (ASGI names are lower case)."""
    for k, v in headers:
        if k == name:
            return v
    return None


def body_type_accepted(content_type: bytes | None) -> bool:
    """No ``Content-Type`` counts as JSON; parameters (``charset``) do not matter."""
    if content_type is None:
        return True
    return content_type.split(b";", 1)[0].strip().lower() in CONSUMED


def negotiate(accept: bytes | None) -> bytes | None:
    """The answer type for an ``Accept`` header, or None when it allows none of ``PRODUCED`` (406).

    As JAX-RS does it: each produced type takes the quality of the most specific range that matches it
    (``type/subtype``, then ``type/*``, then ``*/*``; ``q=0`` excludes), and the best (client quality, then
    server quality) wins. No header, or an empty one, means anything."""
    if accept is None:
        return CT_V1
    hit = _NEGOTIATED.get(accept, b"")
    if hit != b"":
        return hit
    chosen = _negotiate(accept)
    if len(_NEGOTIATED) >= _NEGOTIATED_MAX:
        _NEGOTIATED.clear()
    _NEGOTIATED[accept] = chosen
    return chosen


def _negotiate(accept: bytes) -> bytes | None:
    ranges = _parse_accept(accept)
    if not ranges:
        return CT_V1
    best: tuple[float, float] | None = None
    chosen = None
    for media, qs in PRODUCED:
        kind, _, sub = media.partition(b"/")
        q = None
        specificity = -1
        for r_kind, r_sub, r_q in ranges:
            if r_kind == kind and r_sub == sub:
                s = 2
            elif r_kind == kind and r_sub == b"*":
                s = 1
            elif r_kind == b"*" and r_sub == b"*":
                s = 0
            else:
                continue
            if s > specificity:
                specificity, q = s, r_q
        if q is None or q <= 0:
            continue
        if best is None or (q, qs) > best:
            best, chosen = (q, qs), media
    return chosen


def _parse_accept(accept: bytes) -> list[tuple[bytes, bytes, float]]:
    """(type, subtype, q) per media range; ranges that are not ``type/subtype`` (or ``*``) are skipped."""
    out = []
    for part in accept.lower().split(b","):
        media, *params = part.split(b";")
        media = media.strip()
        if not media:
            continue
        if media == b"*":
            media = b"*/*"
        kind, slash, sub = media.partition(b"/")
        if not slash or not kind or not sub:
            continue
        q = 1.0
        for p in params:
            name, _, value = p.partition(b"=")
            if name.strip() == b"q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 1.0
        out.append((kind.strip(), sub.strip(), q))
    return out
