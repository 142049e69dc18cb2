"""Bearer tokens: OAuth 2 / OIDC access tokens validated as JWTs against a JWKS URL or static keys.

A token is accepted when its signature verifies with a key of the key set (found by the token's ``kid``, or
the only key when there is one), its algorithm is an asymmetric one that key can use (RS*, PS*, ES*, EdDSA;
never ``none`` or a shared secret), it has not expired (``exp`` is required; 30 s of leeway for clock skew), and
its ``iss`` and ``aud`` are the configured ones when configured. The principal is the ``principal_claim``
(default ``sub``); roles come from ``roles_claim`` (default ``roles``; a dotted path such as
``realm_access.roles`` reaches into nested claims; a list or a space-separated string).

The key set from ``--jwks-url`` is fetched at startup and again when a token names a ``kid`` it does not know (a
key rotation), at most once per ``refresh_interval`` so that tokens with made-up ``kid`` values cannot make the
registry hammer the identity provider. Fetching uses the async HTTP client, so it never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from registry.security.passwords import AUTH_EXTRA, MissingExtraError
from registry.security.principal import Principal

log = logging.getLogger(__name__)

ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})
LEEWAY = 30.0


class TokenError(Exception):
    """A token that is not accepted; the message says why (it goes back to the caller)."""


def _jwt() -> Any:
    try:
        import jwt
    except ImportError:
        raise MissingExtraError(f"bearer authentication needs PyJWT: {AUTH_EXTRA}") from None
    return jwt


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    principal: Principal
    expires: float  # unix time


def parse_key_set(data: Any, source: str) -> dict[str | None, Any]:
    """``kid`` -> PyJWK of a JWKS document (or of a single JWK); keys that are not for signatures are skipped."""
    jwt = _jwt()
    if isinstance(data, Mapping) and "keys" not in data and "kty" in data:
        data = {"keys": [data]}
    if not isinstance(data, Mapping) or not isinstance(data.get("keys"), list):
        raise ValueError(f"{source}: not a JWKS document (an object with a 'keys' list)")
    keys: dict[str | None, Any] = {}
    for i, jwk in enumerate(data["keys"]):
        if not isinstance(jwk, Mapping) or jwk.get("use", "sig") != "sig":
            continue
        try:
            key = jwt.PyJWK(dict(jwk))
        except Exception as e:  # PyJWKError, InvalidKeyError: name the key and go on with the others
            log.warning("%s: key %d (kid %r) skipped: %s", source, i, jwk.get("kid"), e)
            continue
        keys[jwk.get("kid")] = key
    return keys


def load_static_keys(path: str) -> dict[str | None, Any]:
    """``--jwt-key``: a JWKS (or single JWK) JSON file, or one PEM public key (used for any ``kid``)."""
    import orjson

    with open(path, "rb") as f:
        raw = f.read()
    if raw.lstrip().startswith(b"{"):
        return parse_key_set(orjson.loads(raw), path)
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    return {None: _PemKey(load_pem_public_key(raw))}


class _PemKey:
    """A PEM public key, with the two attributes of PyJWK used here."""

    def __init__(self, public: Any) -> None:
        self.key = public
        self.algorithm_name: str | None = None


def _claim(claims: Mapping[str, Any], path: str) -> Any:
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


class JwtValidator:
    def __init__(
        self,
        *,
        jwks_url: str | None = None,
        static_keys: Mapping[str | None, Any] | None = None,
        issuer: str | None = None,
        audience: str | None = None,
        principal_claim: str = "sub",
        roles_claim: str | None = "roles",
        refresh_interval: float = 5.0,
        verify: bool | str = True,
    ) -> None:
        if jwks_url is None and not static_keys:
            raise ValueError("bearer authentication needs --jwks-url or --jwt-key")
        self.jwks_url = jwks_url
        self.issuer = issuer
        self.audience = audience
        self.principal_claim = principal_claim
        self.roles_claim = roles_claim
        self.refresh_interval = refresh_interval
        self.verify = verify
        self._static = dict(static_keys or {})
        self._fetched: dict[str | None, Any] = {}
        self._last_fetch = -1e9
        self._fetch_lock = asyncio.Lock()
        self._jwt = _jwt()

    def describe(self) -> str:
        source = self.jwks_url or f"{len(self._static)} static keys"
        return (
            f"JWTs signed by keys from {source}, principal claim {self.principal_claim!r}, roles claim "
            f"{self.roles_claim!r}, issuer {self.issuer or 'any'}, audience {self.audience or 'any'}"
        )

    def _keys(self) -> dict[str | None, Any]:
        return {**self._fetched, **self._static}

    async def refresh(self, *, force: bool = False) -> bool:
        """Fetch the JWKS again unless it was fetched less than ``refresh_interval`` ago; True if fetched."""
        if self.jwks_url is None:
            return False
        async with self._fetch_lock:
            if not force and time.monotonic() - self._last_fetch < self.refresh_interval:
                return False
            self._last_fetch = time.monotonic()
            try:
                async with httpx.AsyncClient(timeout=10.0, verify=self.verify, trust_env=False) as http:
                    resp = await http.get(self.jwks_url)
                resp.raise_for_status()
                self._fetched = parse_key_set(resp.json(), self.jwks_url)
            except (httpx.HTTPError, ValueError) as e:
                log.warning("cannot fetch the JWKS from %s: %s", self.jwks_url, e)
                return False
            log.info("JWKS from %s: %d signing keys", self.jwks_url, len(self._fetched))
            return True

    async def validate(self, token: str) -> VerifiedToken:
        jwt = self._jwt
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as e:
            raise TokenError(f"malformed token: {e}") from None
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise TokenError(f"token algorithm {alg!r} is not accepted (one of {', '.join(sorted(ALGORITHMS))})")
        kid = header.get("kid")
        key = self._find(kid)
        if key is None and await self.refresh():
            key = self._find(kid)
        if key is None:
            key = self._static.get(None)  # a PEM key signs tokens of any kid
        if key is None:
            raise TokenError(f"no key for the token's kid {kid!r}")
        if key.algorithm_name not in (None, alg):
            raise TokenError(f"the key {kid!r} is for {key.algorithm_name}, the token says {alg}")
        options: dict[str, Any] = {"require": ["exp"], "verify_aud": self.audience is not None}
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=LEEWAY,
                options=options,
            )
        except jwt.ExpiredSignatureError:
            raise TokenError("token expired") from None
        except jwt.PyJWTError as e:
            raise TokenError(f"invalid token: {e}") from None
        name = _claim(claims, self.principal_claim)
        if not isinstance(name, str) or not name:
            raise TokenError(f"token has no principal claim {self.principal_claim!r}")
        roles: frozenset[str] = frozenset()
        if self.roles_claim:
            raw = _claim(claims, self.roles_claim)
            if isinstance(raw, str):
                roles = frozenset(raw.split())
            elif isinstance(raw, list):
                roles = frozenset(r for r in raw if isinstance(r, str))
        return VerifiedToken(Principal(name, roles, "bearer"), float(claims["exp"]))

    def _find(self, kid: str | None) -> Any:
        keys = self._keys()
        found = keys.get(kid)
        if found is None and kid is None and len(keys) == 1:
            found = next(iter(keys.values()))  # a token without kid, and a key set of one key
        return found
