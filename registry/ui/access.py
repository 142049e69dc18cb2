"""Who is calling the ``/ui/api/`` helpers and what they may see and do, by the registry's own security rules.

The helpers answer from the same state as the API, so they apply the same rules: with authentication on, the
registry sets ``app.state.security`` (``registry/security``), and ``Caller`` asks its authenticator who the
caller is and its authorizer what they may do, with the resources the API uses (``Subject:<name>``, ``Config:``).
Without it (None, or an app built without security) every caller may do everything, as on the API.

A helper answer under authentication is never served from the read cache: it carries no ``access`` mark on its
ticket, which the cache's guard takes as "let the app answer" (``read_cache.ReadGuard``), so listings filtered
for one caller never reach another.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

from fastapi import Request

from registry import errors

READ = "Read"
WRITE = "Write"
CONFIG = "Config:"


def subject_resource(subject: str) -> str:
    return f"Subject:{subject}"


@dataclass(frozen=True)
class Caller:
    """The caller of one request: ``principal`` (its object from the security layer, None without one)."""

    security: Any
    principal: Any

    @property
    def name(self) -> str | None:
        return None if self.principal is None else str(self.principal.name)

    def may(self, operation: str, resource: str) -> bool:
        if self.security is None:
            return True
        if self.principal is None:
            return False
        # the security package is there whenever ``app.state.security`` is set
        op = import_module("registry.security").Operation(operation)
        return bool(self.security.authorizer.allows_any(self.principal, op, (resource,)))

    def require(self, operation: str, resource: str) -> None:
        """403 as the API words it, unless the caller may."""
        if not self.may(operation, resource):
            kind, _, name = resource.partition(":")
            raise errors.forbidden(operation, f"{kind}: {name}")


async def identify(request: Request) -> Caller | None:
    """The caller, or None when authentication is on and the request's credentials do not authenticate."""
    security = getattr(request.app.state, "security", None)
    if security is None:
        return Caller(None, None)
    try:
        principal = await security.authenticator.authenticate(request.scope, request.body)
    except Exception:  # whatever the mechanism's error: not authenticated
        return None
    return Caller(security, principal)


def challenges(request: Request) -> list[tuple[str, str]]:
    """The ``WWW-Authenticate`` headers of a 401 (one per mechanism the registry's security layer offers)."""
    security = getattr(request.app.state, "security", None)
    offered = getattr(security, "challenges", None)
    return [("www-authenticate", c) for c in (offered() if offered is not None else [])]


async def caller(request: Request) -> Caller:
    """A route dependency: the caller, or 401 (the pages then ask the browser to sign in through the API)."""
    found = await identify(request)
    if found is None:
        # no WWW-Authenticate: the pages' own sign-in form asks, not the browser's dialog
        raise errors.unauthorized("the credentials of this request do not authenticate", [])
    return found
