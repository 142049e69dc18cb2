"""TLS for the server (``--tls-cert``, ``--tls-key``, ``--tls-client-ca``) and the client certificate in the ASGI scope.

uvicorn verifies client certificates (``ssl_cert_reqs``) but does not tell the application which certificate a
connection presented. ``protocol_class`` returns a subclass of the HTTP protocol uvicorn would use that, once per
connection (the handshake is done when ``connection_made`` runs), reads the peer certificate from the
transport's ``ssl_object`` and puts it into every request's scope as the ASGI TLS extension
(``scope["extensions"]["tls"]``: ``client_cert_name`` is the subject as an RFC 4514 string, e.g.
``CN=orders-app,O=Acme``; ``client_cert_chain`` the PEM of the leaf). Only certificates the handshake verified
against ``--tls-client-ca`` get there: with ``optional`` client authentication a connection without a
certificate has ``client_cert_name`` None, and one with an untrusted certificate fails the handshake.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

TLS_EXTENSION = "tls"
CLIENT_AUTH = ("none", "optional", "required")
_CERT_REQS = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def cert_reqs(client_auth: str) -> ssl.VerifyMode:
    return _CERT_REQS[client_auth]


def require_x509() -> None:
    """Client certificates are read with ``cryptography``: fail at startup, not at the first connection."""
    try:
        import cryptography.x509  # noqa: F401
    except ImportError:
        from registry.security.passwords import AUTH_EXTRA, MissingExtraError

        raise MissingExtraError(f"client certificates need cryptography: {AUTH_EXTRA}") from None


def subject_name(der: bytes) -> str:
    """The certificate's subject as an RFC 4514 string (most specific attribute first: ``CN=…,O=…``)."""
    from cryptography import x509

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


def peer_info(transport: asyncio.BaseTransport) -> dict[str, Any] | None:
    """The ASGI TLS extension for a connection, or None on plain HTTP."""
    ssl_object = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    info: dict[str, Any] = {
        "server_cert": None,
        "client_cert_chain": [],
        "client_cert_name": None,
        "client_cert_error": None,
        "tls_version": None,
        "cipher_suite": None,
    }
    if der:
        info["client_cert_chain"] = [ssl.DER_cert_to_PEM_cert(der)]
        info["client_cert_name"] = subject_name(der)
    return info


class _WithTls:
    """The app, with the connection's TLS extension put into each request's scope."""

    __slots__ = ("app", "info")

    def __init__(self, app: Any, info: dict[str, Any]) -> None:
        self.app = app
        self.info = info

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        extensions = scope.get("extensions")
        if extensions is None:
            scope["extensions"] = {TLS_EXTENSION: self.info}
        else:
            extensions[TLS_EXTENSION] = self.info
        await self.app(scope, receive, send)


def protocol_class(base: type[asyncio.Protocol] | None = None) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (``auto``: httptools when installed, else h11) reporting client certificates."""
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        base = AutoHTTPProtocol

    class TlsHttpProtocol(base):  # type: ignore[valid-type,misc]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            info = peer_info(transport)
            if info is not None:
                self.app: Any = _WithTls(self.app, info)

    return TlsHttpProtocol


def client_context(ca: str | None, cert: str | None, key: str | None) -> ssl.SSLContext | bool:
    """The context for outgoing HTTPS (forwarding to the leader): ``ca`` to trust (else the system's), and a
    client certificate to present where the leader asks for one."""
    if ca is None and cert is None:
        return True
    ctx = ssl.create_default_context(cafile=ca)
    if cert is not None:
        ctx.load_cert_chain(cert, key)
    return ctx
