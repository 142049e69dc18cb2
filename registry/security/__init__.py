"""Authentication, authorization and TLS for the registry (the HTTP side is ``registry/http/security.py``).

- ``principal.py``: ``Principal``, who is calling
- ``passwords.py``: argon2/bcrypt hashes and Karapace's salted hashes
- ``users_file.py``: the users file (Karapace's auth file is one), reloaded when it changes
- ``tokens.py``: bearer JWTs against a JWKS URL or static keys
- ``tls.py``: server TLS, and the client certificate in the ASGI scope
- ``forwarded.py``: a follower's signed statement of a caller's identity, and the header that marks a forwarded request
- ``authenticator.py``: the principal of a request; ``permissions.py``: what it may do
- ``audit.py``: one line per write and per denial; ``config.py``: the settings and their options

``Security`` ties them together for one instance; ``build_security`` makes it from the settings.
"""

from __future__ import annotations

import logging
from dataclasses import KW_ONLY, dataclass

from registry.security.authenticator import AuthenticationFailed, Authenticator
from registry.security.config import SecurityConfig
from registry.security.permissions import Authorizer, Operation
from registry.security.principal import Principal
from registry.security.tokens import JwtValidator, load_static_keys
from registry.security.users_file import UsersFile, UsersFileWatcher

log = logging.getLogger(__name__)

REALM = "schemakit"

__all__ = ["AuthenticationFailed", "Operation", "Principal", "Security", "SecurityConfig", "build_security"]


@dataclass(eq=False, repr=False)  # compared by identity, and never printed: the config holds secrets
class Security:
    """The authenticator and authorizer of one instance, kept up to date with the users file."""

    config: SecurityConfig
    authenticator: Authenticator
    authorizer: Authorizer
    _: KW_ONLY
    users: UsersFileWatcher | None = None
    tokens: JwtValidator | None = None

    # UsersFileListener
    def users_file_loaded(self, contents: UsersFile) -> None:
        self.authenticator.users_file_loaded(contents)
        self.authorizer.set_rules(contents.permissions)

    async def start(self) -> None:
        if self.users is not None:
            self.users.start()
        if self.tokens is not None:
            await self.tokens.refresh(force=True)

    async def stop(self) -> None:
        if self.users is not None:
            await self.users.stop()

    def describe(self) -> list[str]:
        """What is enforced, for the startup log."""
        lines = [f"authentication: {', '.join(self.config.auth)}"]
        if self.users is not None:
            lines.append(f"users file {self.users.describe()}; reloaded when it changes")
        else:
            lines.append("no users file: every authenticated caller may do everything")
        if self.tokens is not None:
            lines.append(f"bearer tokens: {self.tokens.describe()}")
        return lines

    def challenges(self, failure: AuthenticationFailed | None = None) -> list[str]:
        """``WWW-Authenticate`` values of a 401, one per header-based mechanism."""
        out = []
        if "basic" in self.config.auth:
            out.append(f'Basic realm="{REALM}", charset="UTF-8"')
        if "bearer" in self.config.auth:
            value = f'Bearer realm="{REALM}"'
            if failure is not None and failure.bearer_error:
                reason = failure.reason.replace("\\", "\\\\").replace('"', "'")
                value += f', error="invalid_token", error_description="{reason}"'
            out.append(value)
        return out


def build_security(config: SecurityConfig) -> Security | None:
    """The instance's security, or None when ``--auth`` is not set (everything open, as without this package)."""
    if not config.auth:
        return None
    tokens = None
    if "bearer" in config.auth:
        tokens = JwtValidator(
            jwks_url=config.jwks_url,
            static_keys=load_static_keys(config.jwt_key) if config.jwt_key else None,
            issuer=config.jwt_issuer,
            audience=config.jwt_audience,
            principal_claim=config.jwt_principal_claim,
            roles_claim=config.jwt_roles_claim or None,
        )
    authenticator = Authenticator(
        frozenset(config.auth),
        tokens=tokens,
        inter_node_secret=config.inter_node_secret.encode() if config.inter_node_secret else None,
    )
    security = Security(config, authenticator, Authorizer(None), tokens=tokens)
    if config.users_file:
        security.users = UsersFileWatcher(config.users_file, security)
    return security
