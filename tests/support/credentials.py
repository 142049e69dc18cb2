"""Credentials for the registry's security tests (tests/security, tests/ha): certificates made here with
``cryptography`` (``Pki``), an OIDC-style token issuer whose JWKS a real HTTP server in the test process serves
(``Issuer``, through ``http_stub``), and users files (``UsersFile``). ``tests/conftest.py`` makes them fixtures
(``pki``, ``issuer``, ``users_file``)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from registry.security.passwords import hash_password
from tests.support.http_stub import StubServer


def _name(cn: str, org: str = "Acme") -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, org), x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(
    path: Path, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey, password: str | None = None
) -> tuple[str, str]:
    path.with_suffix(".pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    encryption = serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
    path.with_suffix(".key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    )
    return str(path.with_suffix(".pem")), str(path.with_suffix(".key"))


@dataclass
class Pki:
    """A CA and certificates it signs, as PEM files: ``ca``, ``server`` (127.0.0.1, localhost; also usable as a
    client certificate, as instances present it to each other) and ``client(cn)``."""

    dir: Path
    ca: str = ""
    server: tuple[str, str] = ("", "")
    _ca_cert: Any = None
    _ca_key: Any = None

    def _issue(
        self,
        name: x509.Name,
        *,
        ca: bool = False,
        sans: list[x509.GeneralName] | None = None,
        issuer: tuple[Any, Any] | None = None,
    ) -> tuple[x509.Certificate, Any]:
        key = ec.generate_private_key(ec.SECP256R1())
        signer_cert, signer_key = issuer or (self._ca_cert, self._ca_key)
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name if ca else signer_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if ca:
            builder = builder.add_extension(
                x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
            ).add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        else:
            builder = builder.add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            ).add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(signer_cert.public_key()), critical=False
            )
            if sans:
                builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(key if ca else signer_key, hashes.SHA256())
        return cert, key

    def make(self) -> Pki:
        self._ca_cert, self._ca_key = self._issue(_name("schemakit test CA"), ca=True, issuer=(None, None))
        self.ca, _ = _write(self.dir / "ca", self._ca_cert, self._ca_key)
        sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        self.server = _write(self.dir / "server", *self._issue(_name("registry"), sans=sans))
        return self

    def serve_options(self) -> list[str]:
        """``schemakit serve``'s options for HTTPS with the server certificate, checking client certificates
        against the CA."""
        cert, key = self.server
        return ["--tls-cert", cert, "--tls-key", key, "--tls-client-ca", self.ca]

    def context(self, client: tuple[str, str] | None = None) -> ssl.SSLContext:
        """An httpx ``verify=`` context trusting this CA, presenting ``client`` (cert, key) when given."""
        ctx = ssl.create_default_context(cafile=self.ca)
        if client is not None:
            ctx.load_cert_chain(*client)
        return ctx

    @staticmethod
    def system_context(client: tuple[str, str]) -> ssl.SSLContext:
        """The system's CAs only (which do not know this CA), presenting ``client``."""
        ctx = ssl.create_default_context()
        ctx.load_cert_chain(*client)
        return ctx

    def client(self, cn: str, password: str | None = None) -> tuple[str, str]:
        """A client certificate with subject ``CN=<cn>,O=Acme`` (files: cert, key; the key encrypted with
        ``password`` when given)."""
        return _write(self.dir / f"client-{cn}", *self._issue(_name(cn)), password)

    def untrusted_client(self, cn: str) -> tuple[str, str]:
        """A client certificate from another CA."""
        other = Pki(self.dir / "other")
        other.dir.mkdir(exist_ok=True)
        other.make()
        return other.client(cn)


class Issuer:
    """An OIDC-style token issuer: RSA signing keys, its JWKS served over HTTP by this process."""

    def __init__(self, issuer: str = "https://idp.test", audience: str = "schema-registry") -> None:
        self.issuer = issuer
        self.audience = audience
        self.keys: dict[str, rsa.RSAPrivateKey] = {}
        self.published: list[str] = []  # kids in the JWKS
        self.add_key("k1")
        self.jwks_server = StubServer("application/json", lambda: json.dumps(self.jwks()).encode())
        self.jwks_url = f"{self.jwks_server.url}/jwks.json"

    @property
    def fetches(self) -> int:
        """How many times the JWKS was fetched."""
        return len(self.jwks_server.headers)

    def add_key(self, kid: str, publish: bool = True) -> None:
        self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if publish:
            self.published.append(kid)

    def jwks(self) -> dict[str, Any]:
        out = []
        for kid in self.published:
            jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.keys[kid].public_key()))
            out.append({**jwk, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": out}

    def token(
        self, sub: str, *, roles: list[str] | None = None, kid: str = "k1", ttl: float = 300, **claims: Any
    ) -> str:
        now = int(time.time())
        payload = {"iss": self.issuer, "aud": self.audience, "sub": sub, "iat": now, "exp": now + int(ttl), **claims}
        if roles is not None:
            payload["roles"] = roles
        return jwt.encode(payload, self.keys[kid], algorithm="RS256", headers={"kid": kid})

    def close(self) -> None:
        self.jwks_server.close()


@dataclass
class UsersFile:
    """A users file in schemakit's format, written on ``save()`` (argon2 hashes)."""

    path: Path
    users: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    permissions: list[dict[str, str]] = field(default_factory=list)
    _hashes: dict[tuple[str, str], str] = field(default_factory=dict)

    def user(self, name: str, password: str, roles: list[str] | None = None) -> UsersFile:
        self.users[name] = (password, roles or [])
        return self

    def allow(self, who: str, operation: str, resource: str, *, role: bool = False) -> UsersFile:
        self.permissions.append({"role" if role else "username": who, "operation": operation, "resource": resource})
        return self

    def save(self) -> str:
        users = []
        for name, (password, roles) in self.users.items():
            if (name, password) not in self._hashes:
                self._hashes[(name, password)] = hash_password(password, "argon2").password_hash
            entry: dict[str, Any] = {"username": name, "password_hash": self._hashes[(name, password)]}
            if roles:
                entry["roles"] = roles
            users.append(entry)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"users": users, "permissions": self.permissions}, indent=2))
        tmp.replace(self.path)  # as an operator's tooling (or a ConfigMap swap) replaces it
        return str(self.path)
