"""Secrets out of log URLs before they reach a message: ``redact_url`` for every error, log line and
``describe()`` that shows a URL (``Log.safe_url``).

A log URL may carry credentials: a password in its user info (``kafka://user:pw@host:9092``) and client
settings in its query (``sasl.password``, ``ssl.key.password``, an OAuth client secret, a PEM key). The
URL itself must stay intact (it is needed to connect), so only what is shown is redacted.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["REDACTED", "is_secret_option", "redact_url"]

REDACTED = "***"

# librdkafka settings (with or without a producer./consumer./admin. prefix) whose values are secrets.
_SECRET_OPTION = re.compile(r"password|secret|token|credential|jaas|pem|oauthbearer\.config", re.IGNORECASE)
# scheme://authority, then the rest; the authority ends at the first / ? or #
_AUTHORITY = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)(.*)", re.DOTALL)


def is_secret_option(name: str) -> bool:
    """Whether a client setting named ``name`` holds a secret (its value must never be shown)."""
    return bool(_SECRET_OPTION.search(name))


def redact_url(url: str) -> str:
    """``url`` with the user-info password and every secret query value replaced by ``***``; a URL without
    secrets comes back unchanged. Works on malformed URLs too: they are what error messages show."""
    m = _AUTHORITY.fullmatch(url)
    if m is None:
        return url
    scheme, authority, rest = m.groups()
    if "@" in authority:
        userinfo, _, hosts = authority.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        authority = f"{user}:{REDACTED}@{hosts}" if colon else authority
    path, qmark, query = rest.partition("?")
    if qmark:
        query, hash_, fragment = query.partition("#")
        pairs = []
        for pair in query.split("&"):
            key, eq, _ = pair.partition("=")
            pairs.append(f"{key}={REDACTED}" if eq and is_secret_option(unquote(key)) else pair)
        rest = f"{path}?{'&'.join(pairs)}{hash_}{fragment}"
    return f"{scheme}{authority}{rest}"
