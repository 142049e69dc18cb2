"""A caller's identity carried from a follower to the leader, signed with the cluster's shared secret.

Followers forward writes with the caller's headers, so a caller who authenticated with ``Authorization``
(basic or bearer) is simply authenticated again by the leader: nothing is trusted that the leader did not
check. A caller authenticated by a client certificate cannot be re-checked that way: the leader's TLS peer is
the follower, not the caller. So the follower states the principal in ``X-Schemakit-Principal`` (and its roles)
with an HMAC-SHA256 over that identity, the request (method, path, query, a digest of the body) and the time,
keyed with ``--inter-node-secret``, which every instance of the cluster shares.

The leader believes a stated principal only with a valid signature made within ``MAX_SKEW`` seconds, and a
forwarded request never authenticates as the TLS peer (the follower's own certificate). Threat model: whoever
holds the secret can act as any principal, so it is a cluster credential (keep it like the TLS keys); without
it, a caller can neither make up an identity nor move a signed one to another request; a signed request
captured on the wire could be replayed within ``MAX_SKEW`` seconds, which TLS between the instances rules out.

``FORWARDED_HEADER`` marks a request a follower forwarded (``registry/forwarder.py`` sets it, the
authenticator reads it); it lives here, below both, because it is part of what a forwarded identity is.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from urllib.parse import quote, unquote

from registry.security.principal import Principal

#: set by a follower on every request it forwards to the leader (its value is ignored)
FORWARDED_HEADER = b"x-schemakit-forwarded"
PRINCIPAL_HEADER = b"x-schemakit-principal"
ROLES_HEADER = b"x-schemakit-principal-roles"
SIGNATURE_HEADER = b"x-schemakit-principal-signature"
HEADERS = (PRINCIPAL_HEADER, ROLES_HEADER, SIGNATURE_HEADER)
MAX_SKEW = 60.0


def _mac(secret: bytes, stamp: str, method: str, path: bytes, query: bytes, name: str, roles: str, body: bytes) -> str:
    message = b"\n".join(
        [
            b"schemakit-forwarded-v1",
            stamp.encode(),
            method.encode(),
            path,
            query,
            name.encode(),
            roles.encode(),
            hashlib.sha256(body).hexdigest().encode(),
        ]
    )
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def sign(
    secret: bytes, principal: Principal, method: str, path: bytes, query: bytes, body: bytes, now: float | None = None
) -> list[tuple[bytes, bytes]]:
    """The headers stating ``principal`` for this request."""
    name = quote(principal.name, safe="")
    roles = ",".join(quote(r, safe="") for r in sorted(principal.roles))
    stamp = str(int(time.time() if now is None else now))
    mac = _mac(secret, stamp, method, path, query, name, roles, body)
    return [
        (PRINCIPAL_HEADER, name.encode()),
        (ROLES_HEADER, roles.encode()),
        (SIGNATURE_HEADER, f"t={stamp},v1={mac}".encode()),
    ]


def verify(
    secret: bytes,
    headers: dict[bytes, bytes],
    method: str,
    path: bytes,
    query: bytes,
    body: bytes,
    now: float | None = None,
) -> Principal | None:
    """The stated principal when the signature holds, else None."""
    name = headers.get(PRINCIPAL_HEADER, b"").decode("latin-1")
    roles = headers.get(ROLES_HEADER, b"").decode("latin-1")
    fields = dict(
        part.split("=", 1) for part in headers.get(SIGNATURE_HEADER, b"").decode("latin-1").split(",") if "=" in part
    )
    stamp, mac = fields.get("t", ""), fields.get("v1", "")
    if not name or not stamp.isdigit() or not mac:
        return None
    if abs((time.time() if now is None else now) - int(stamp)) > MAX_SKEW:
        return None
    if not hmac.compare_digest(mac, _mac(secret, stamp, method, path, query, name, roles, body)):
        return None
    return Principal(unquote(name), frozenset(unquote(r) for r in roles.split(",") if r), "forwarded")
