"""Authentication: the principal of a request, by the mechanisms ``--auth`` enables.

- ``Authorization: Basic …`` (``basic``): a user of the users file and its password hash;
- ``Authorization: Bearer …`` (``bearer``): a JWT (``tokens.py``);
- no ``Authorization`` header (``mtls``): the verified client certificate's subject (``tls.py``);
- a write forwarded by a follower for a certificate-authenticated caller: the signed principal
  (``forwarded.py``); a forwarded request never authenticates as the TLS peer, which is the follower.

Verifying a password costs tens of milliseconds (argon2, bcrypt, scrypt, PBKDF2), so it runs in a worker thread,
once for concurrent requests with the same credentials, and the outcome is kept per ``Authorization`` value:
a success until the users file changes (at most ``TTL`` seconds), a token until it expires, a failure for
``FAILURE_TTL`` seconds (a client retrying a wrong password does not cost a hash each time). ``remembered`` is
the read cache's hot path (``ReadGuard``): a dict lookup, never a verification. ``generation`` counts the users
files loaded, so whoever keeps decisions made from remembered credentials knows when they stop holding.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from registry.security import forwarded
from registry.security.config import MECHANISMS
from registry.security.passwords import verify
from registry.security.principal import Principal
from registry.security.tls import TLS_EXTENSION
from registry.security.tokens import JwtValidator, TokenError
from registry.security.users_file import User, UsersFile

TTL = 600.0
FAILURE_TTL = 2.0
MAX_CACHED = 10_000


class AuthenticationFailed(Exception):
    """401: ``reason`` goes back to the caller; ``bearer_error`` marks a rejected token (RFC 6750 ``invalid_token``)."""

    def __init__(self, reason: str, *, bearer_error: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.bearer_error = bearer_error


class Authenticator:
    def __init__(
        self,
        mechanisms: frozenset[str],
        *,
        tokens: JwtValidator | None = None,
        inter_node_secret: bytes | None = None,
    ) -> None:
        unknown = mechanisms - set(MECHANISMS)
        if unknown:
            raise ValueError(f"unknown authentication mechanism(s) {sorted(unknown)} (one of {', '.join(MECHANISMS)})")
        self.mechanisms = mechanisms
        self.tokens = tokens
        self.inter_node_secret = inter_node_secret
        self.users: Mapping[str, User] = {}
        #: Authorization value -> (valid until, principal or None for a failure, failure reason)
        self._cache: dict[bytes, tuple[float, Principal | None, AuthenticationFailed | None]] = {}
        self._pending: dict[bytes, asyncio.Future[Principal]] = {}
        self._certs: dict[str, Principal] = {}
        #: bumped whenever the users change: a credential remembered before may no longer be valid
        self.generation = 0

    # UsersFileListener
    def users_file_loaded(self, contents: UsersFile) -> None:
        self.users = contents.users
        self._cache = {}
        self.generation += 1

    def remembered(self, authorization: bytes) -> tuple[float, Principal] | None:
        """The principal already verified for this ``Authorization`` value and until when (``time.monotonic``)
        that holds, else None (never verified, refused, or expired): a dict lookup, never a verification."""
        entry = self._cache.get(authorization)
        if entry is None or entry[1] is None or entry[0] < time.monotonic():
            return None
        return entry[0], entry[1]

    async def authenticate(self, scope: Mapping[str, Any], body: Callable[[], Awaitable[bytes]]) -> Principal:
        """The caller's principal, or AuthenticationFailed."""
        headers = scope["headers"]
        authorization = None
        is_forwarded = False
        for k, v in headers:
            if k == b"authorization":
                authorization = v
            elif k == forwarded.FORWARDED_HEADER:
                is_forwarded = True
        if (
            is_forwarded
            and self.inter_node_secret is not None
            and any(k == forwarded.SIGNATURE_HEADER for k, _ in headers)
        ):
            principal = forwarded.verify(
                self.inter_node_secret,
                dict(headers),
                scope["method"],
                scope.get("raw_path") or scope["path"].encode(),
                scope.get("query_string", b""),
                await body(),
            )
            if principal is None:
                raise AuthenticationFailed("the forwarded identity's signature does not verify")
            return principal
        if authorization is not None:
            return await self._credentials(authorization)
        if not is_forwarded and "mtls" in self.mechanisms:
            principal = self.certificate(scope)
            if principal is not None:
                return principal
        raise AuthenticationFailed(self._missing())

    def _missing(self) -> str:
        ways = []
        if "basic" in self.mechanisms:
            ways.append("basic credentials")
        if "bearer" in self.mechanisms:
            ways.append("a bearer token")
        if "mtls" in self.mechanisms:
            ways.append("a client certificate")
        return "authentication required: " + " or ".join(ways)

    def certificate(self, scope: Mapping[str, Any]) -> Principal | None:
        """The principal of the verified client certificate (``mtls``), else None."""
        if "mtls" not in self.mechanisms:
            return None
        tls = (scope.get("extensions") or {}).get(TLS_EXTENSION)
        name = tls.get("client_cert_name") if tls else None
        if not name:
            return None
        principal = self._certs.get(name)
        if principal is None:
            if len(self._certs) >= MAX_CACHED:
                self._certs.clear()
            principal = self._certs[name] = Principal(name, frozenset(), "mtls")
        return principal

    async def _credentials(self, authorization: bytes) -> Principal:
        now = time.monotonic()
        entry = self._cache.get(authorization)
        if entry is not None and entry[0] >= now:
            if entry[1] is not None:
                return entry[1]
            assert entry[2] is not None
            raise entry[2]
        pending = self._pending.get(authorization)
        if pending is None:
            pending = self._pending[authorization] = asyncio.get_running_loop().create_future()
            try:
                principal, until = await self._verify(authorization)
            except asyncio.CancelledError:
                pending.cancel()
                raise
            except AuthenticationFailed as e:
                self._remember(authorization, time.monotonic() + FAILURE_TTL, None, e)
                pending.set_exception(e)
            else:
                self._remember(authorization, until, principal, None)
                pending.set_result(principal)
            finally:
                del self._pending[authorization]
        return await asyncio.shield(pending)

    def _remember(
        self, key: bytes, until: float, principal: Principal | None, failure: AuthenticationFailed | None
    ) -> None:
        cache = self._cache
        if len(cache) >= MAX_CACHED:
            now = time.monotonic()
            for k in [k for k, v in cache.items() if v[0] < now]:
                del cache[k]
            if len(cache) >= MAX_CACHED:
                cache.clear()
        cache[key] = (until, principal, failure)

    async def _verify(self, authorization: bytes) -> tuple[Principal, float]:
        scheme, _, credentials = authorization.decode("latin-1").strip().partition(" ")
        scheme = scheme.lower()
        credentials = credentials.strip()
        if scheme == "basic" and "basic" in self.mechanisms:
            return await self._basic(credentials), time.monotonic() + TTL
        if scheme == "bearer" and "bearer" in self.mechanisms and self.tokens is not None:
            try:
                token = await self.tokens.validate(credentials)
            except TokenError as e:
                raise AuthenticationFailed(str(e), bearer_error=True) from None
            lifetime = min(TTL, token.expires - time.time())
            return token.principal, time.monotonic() + max(0.0, lifetime)
        raise AuthenticationFailed(f"unsupported authorization scheme {scheme!r}; {self._missing()}")

    async def _basic(self, credentials: str) -> Principal:
        try:
            decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise AuthenticationFailed("malformed basic credentials") from None
        username, sep, password = decoded.partition(":")
        if not sep:
            raise AuthenticationFailed("malformed basic credentials")
        user = self.users.get(username)
        if user is None or not await asyncio.to_thread(verify, user.password, password):
            raise AuthenticationFailed("invalid username or password")
        return Principal(user.username, user.roles, "basic")
