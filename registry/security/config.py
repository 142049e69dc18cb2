"""The security settings of one instance (``--auth``, ``--users-file``, JWT, TLS, inter-node trust) and their
command-line options; ``RegistryConfig.security`` holds them."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from registry.options import add_env_option
from registry.security.tls import CLIENT_AUTH

#: the authentication mechanisms ``--auth`` takes
MECHANISMS = ("basic", "bearer", "mtls")


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    #: enabled authentication mechanisms (``basic``, ``bearer``, ``mtls``); empty: no authentication at all
    auth: tuple[str, ...] = ()
    #: users and permissions (JSON; Karapace's auth file as it is)
    users_file: str | None = None
    jwks_url: str | None = None
    #: a JWKS/JWK JSON file or a PEM public key that signs bearer tokens
    jwt_key: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_principal_claim: str = "sub"
    jwt_roles_claim: str = "roles"
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_client_ca: str | None = None
    #: ``none``, ``optional`` or ``required``; default: ``optional`` when a client CA is given, else ``none``
    tls_client_auth: str | None = None
    #: the secret instances sign forwarded identities with (``forwarded.py``)
    inter_node_secret: str | None = None
    #: CA that signs the other instances' certificates (forwarding to an https leader); default: system CAs
    inter_node_ca: str | None = None

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    @property
    def client_auth(self) -> str:
        if self.tls_client_auth is not None:
            return self.tls_client_auth
        return "optional" if self.tls_client_ca else "none"

    def problems(self, *, several_instances: bool) -> list[str]:
        """What keeps these settings from working, worded for the operator (empty when all is well)."""
        out = []
        unknown = set(self.auth) - set(MECHANISMS)
        if unknown:
            out.append(f"--auth: unknown mechanism(s) {', '.join(sorted(unknown))} (use {', '.join(MECHANISMS)})")
        if self.users_file and not self.auth:
            out.append("--users-file needs --auth (for example --auth basic)")
        if "basic" in self.auth and not self.users_file:
            out.append("--auth basic needs --users-file (users with password hashes)")
        if "bearer" in self.auth and not (self.jwks_url or self.jwt_key):
            out.append("--auth bearer needs --jwks-url or --jwt-key (the keys that sign the tokens)")
        if "mtls" in self.auth:
            if not self.tls_client_ca:
                out.append("--auth mtls needs TLS with client certificates: --tls-cert, --tls-key and --tls-client-ca")
            if several_instances and not self.inter_node_secret:
                out.append(
                    "--auth mtls on instances that forward writes to a leader needs --inter-node-secret (the same on "
                    "every instance): followers sign the certificate's principal with it"
                )
        if (self.tls_key or self.tls_client_ca) and not self.tls_cert:
            out.append("--tls-key and --tls-client-ca need --tls-cert")
        if self.tls_client_auth is not None and self.tls_client_auth not in CLIENT_AUTH:
            out.append(f"--tls-client-auth must be one of {', '.join(CLIENT_AUTH)}")
        if self.client_auth != "none" and not self.tls_client_ca:
            out.append(f"--tls-client-auth {self.client_auth} needs --tls-client-ca (the CA of client certificates)")
        for option, path in (
            ("--users-file", self.users_file),
            ("--jwt-key", self.jwt_key),
            ("--tls-cert", self.tls_cert),
            ("--tls-key", self.tls_key),
            ("--tls-client-ca", self.tls_client_ca),
            ("--inter-node-ca", self.inter_node_ca),
        ):
            if path and not os.path.isfile(path):
                out.append(f"{option} {path}: no such file")
        return out


def add_arguments(s: argparse.ArgumentParser) -> None:
    """The ``schemakit serve`` options for authentication and TLS (each with its environment variable)."""
    g = s.add_argument_group("authentication and TLS")
    add_env_option(g, "--auth", "", "authentication, comma-separated: basic, bearer, mtls (default: none)")
    add_env_option(
        g,
        "--users-file",
        None,
        "JSON users (argon2/bcrypt hashes) and permissions; Karapace's auth file works as it is; reloaded when it "
        "changes",
    )
    add_env_option(g, "--jwks-url", None, "JWKS of the token issuer")
    add_env_option(g, "--jwt-key", None, "static token keys: a JWKS JSON file or a PEM public key")
    add_env_option(g, "--jwt-issuer", None, "required iss")
    add_env_option(g, "--jwt-audience", None, "required aud")
    add_env_option(g, "--jwt-principal-claim", "sub", "claim naming the principal (default sub)")
    add_env_option(
        g,
        "--jwt-roles-claim",
        "roles",
        "claim holding roles, dotted for nested ones, e.g. realm_access.roles (default roles)",
    )
    add_env_option(g, "--tls-cert", None, "serve HTTPS with this PEM certificate (chain)")
    add_env_option(g, "--tls-key", None, "its PEM private key")
    add_env_option(g, "--tls-client-ca", None, "verify client certificates against this CA (PEM)")
    add_env_option(
        g,
        "--tls-client-auth",
        None,
        "client certificates: none, optional, required (default optional with --tls-client-ca)",
        choices=CLIENT_AUTH,
    )
    add_env_option(
        g,
        "--inter-node-secret",
        None,
        "shared by all instances: signs the identity of certificate-authenticated callers on forwarded writes",
    )
    add_env_option(
        g,
        "--inter-node-ca",
        None,
        "CA of the other instances' certificates, for forwarding to an https leader (default: the system's)",
    )


def from_arguments(args: argparse.Namespace) -> SecurityConfig:
    return SecurityConfig(
        auth=tuple(m.strip().lower() for m in (args.auth or "").split(",") if m.strip()),
        users_file=args.users_file,
        jwks_url=args.jwks_url,
        jwt_key=args.jwt_key,
        jwt_issuer=args.jwt_issuer,
        jwt_audience=args.jwt_audience,
        jwt_principal_claim=args.jwt_principal_claim,
        jwt_roles_claim=args.jwt_roles_claim,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_client_ca=args.tls_client_ca,
        tls_client_auth=args.tls_client_auth,
        inter_node_secret=args.inter_node_secret,
        inter_node_ca=args.inter_node_ca,
    )
