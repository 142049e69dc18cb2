"""The destination registry of an exporter, over HTTP: Confluent's REST API, so the destination may be any
Confluent-compatible registry.

Settings are Confluent's client keys (those of confluent-kafka's ``SchemaRegistryClient``), given in the
exporter's ``config``:

- ``schema.registry.url``: one URL, or several separated by commas (the next is tried when one cannot be
  reached);
- ``basic.auth.user.info`` (``user:password``; ``basic.auth.credentials.source`` ``USER_INFO``, the default, or
  ``URL`` for credentials in the URL itself);
- ``bearer.auth.token`` (``bearer.auth.credentials.source`` ``STATIC_TOKEN``);
- TLS, PEM files: ``schema.registry.ssl.ca.location``, ``schema.registry.ssl.certificate.location``,
  ``schema.registry.ssl.key.location`` (``schema.registry.ssl.key.password``), and
  ``schema.registry.ssl.endpoint.identification.algorithm`` empty or ``none`` to skip the host name check.
  Java key stores (``…truststore.location``) are not read: the message says which keys to use instead.

Every write is idempotent by id and version (``import_schema`` looks before it writes when asked to, and
deletes of what is already gone count as done), so a record exported twice changes nothing.
"""

from __future__ import annotations

import logging
import ssl
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from registry.exporters.definition import URL_CONFIG
from registry.modes import Mode

log = logging.getLogger(__name__)

TLS_PREFIX = "schema.registry.ssl."
JAVA_STORES = ("truststore.location", "keystore.location")
#: destination error codes that mean "already done" for a delete
_GONE = {40401, 40402}


class DestinationError(Exception):
    """A destination call that failed: what was asked, and the destination's answer or the transport error."""


class ConfigError(ValueError):
    """Exporter settings the destination client cannot use (the API answers 40951 with the message)."""


def client_options(config: dict[str, str]) -> dict[str, Any]:
    """httpx options (auth, headers, TLS) from the exporter's config; ConfigError names a key it cannot use."""
    options: dict[str, Any] = {"headers": {}}
    for key in JAVA_STORES:
        if config.get(TLS_PREFIX + key):
            raise ConfigError(
                f"'{TLS_PREFIX}{key}' (a Java key store) is not supported: give PEM files in "
                f"'{TLS_PREFIX}ca.location', '{TLS_PREFIX}certificate.location' and '{TLS_PREFIX}key.location'"
            )
    user_info = config.get("basic.auth.user.info")
    source = config.get("basic.auth.credentials.source", "USER_INFO").upper()
    if user_info and source == "USER_INFO":
        user, sep, password = user_info.partition(":")
        if not sep:
            raise ConfigError("'basic.auth.user.info' must be 'user:password'")
        options["auth"] = httpx.BasicAuth(user, password)
    token = config.get("bearer.auth.token")
    if token:
        if config.get("bearer.auth.credentials.source", "STATIC_TOKEN").upper() != "STATIC_TOKEN":
            raise ConfigError("only 'bearer.auth.credentials.source' STATIC_TOKEN is supported")
        options["headers"]["authorization"] = f"Bearer {token}"
    ca = config.get(TLS_PREFIX + "ca.location")
    cert = config.get(TLS_PREFIX + "certificate.location")
    key_file = config.get(TLS_PREFIX + "key.location")
    check_host = config.get(TLS_PREFIX + "endpoint.identification.algorithm", "https").lower() not in ("", "none")
    if ca or cert or not check_host:
        try:
            context = ssl.create_default_context(cafile=ca or None)
            if cert:
                context.load_cert_chain(cert, key_file or None, config.get(TLS_PREFIX + "key.password") or None)
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"cannot load the TLS files of the exporter config: {e}") from e
        context.check_hostname = check_host
        options["verify"] = context
    return options


def _urls(config: dict[str, str]) -> list[str]:
    """The destination URLs, credentials in a URL moved out of it (httpx takes them as basic auth)."""
    out = []
    for url in config.get(URL_CONFIG, "").split(","):
        parts = urlsplit(url.strip().rstrip("/"))
        netloc = parts.netloc.rpartition("@")[2]
        out.append(urlunsplit((parts.scheme, netloc, parts.path, "", "")))
    return out


def _path(subject: str) -> str:
    return quote(subject, safe="")


class Destination:
    """One exporter's connection to its destination registry."""

    def __init__(self, config: dict[str, str], timeout: float = 10.0) -> None:
        self.urls = _urls(config)
        options = client_options(config)
        url_auth = urlsplit(config.get(URL_CONFIG, "").split(",")[0].strip())
        if "auth" not in options and url_auth.username is not None:
            options["auth"] = httpx.BasicAuth(url_auth.username, url_auth.password or "")
        self.client = httpx.AsyncClient(timeout=timeout, **options)
        #: destination subjects whose mode this exporter set (or found) and need not look at again
        self.modes: dict[str, str] = {}

    async def aclose(self) -> None:
        await self.client.aclose()

    async def call(self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None) -> Any:
        """The JSON answer of a 2xx; a 4xx/5xx raises DestinationError carrying its ``error_code``."""
        last: Exception | None = None
        for base in list(self.urls):
            try:
                response = await self.client.request(
                    method,
                    base + path,
                    json=body,
                    params=params,
                    headers={"content-type": "application/vnd.schemaregistry.v1+json"} if body is not None else None,
                )
            except httpx.TransportError as e:
                last = e
                continue
            if base != self.urls[0]:  # this one answers: ask it first from now on
                self.urls.remove(base)
                self.urls.insert(0, base)
            if response.is_success:
                return response.json() if response.content else None
            raise DestinationCallError(method, base + path, response)
        raise DestinationError(f"{method} {path}: destination unreachable ({type(last).__name__}: {last})")

    # ---- the writes, each idempotent -------------------------------------------------------------------

    async def ensure_import_mode(self, subject: str) -> None:
        """Put a destination subject in IMPORT mode (``force``: it may hold versions) unless this exporter
        knows its mode already; registering with ids needs it."""
        if subject in self.modes:
            return
        found = await self.call("GET", f"/mode/{_path(subject)}", params={"defaultToGlobal": "true"})
        if (found or {}).get("mode") != Mode.IMPORT:
            await self.put_mode(subject, Mode.IMPORT)
        self.modes[subject] = Mode.IMPORT

    async def put_mode(self, subject: str | None, mode: str, *, look_first: bool = False) -> None:
        path = "/mode" if subject is None else f"/mode/{_path(subject)}"
        if not look_first or await self._current(path, "mode") != mode:
            await self.call("PUT", path, {"mode": mode}, params={"force": "true"})
        if subject is not None:
            self.modes[subject] = mode

    async def version(self, subject: str, version: int) -> dict[str, Any] | None:
        """The destination's ``subject``/``version`` (soft-deleted ones too), or None."""
        try:
            found: dict[str, Any] = await self.call(
                "GET", f"/subjects/{_path(subject)}/versions/{version}", params={"deleted": "true"}
            )
        except DestinationCallError as e:
            if e.code in _GONE:
                return None
            raise
        return found

    async def import_schema(
        self, subject: str, version: int, schema_id: int, body: dict[str, Any], *, look_first: bool
    ) -> bool:
        """Register ``body`` as ``subject`` version ``version`` with id ``schema_id`` (IMPORT mode); False when
        the destination had it already (looked up first with ``look_first``)."""
        if look_first:
            found = await self.version(subject, version)
            if found is not None:
                if found.get("id") != schema_id:
                    raise DestinationError(
                        f"{subject} version {version} exists at the destination with id {found.get('id')}, "
                        f"not {schema_id}"
                    )
                return False
        await self.ensure_import_mode(subject)
        answer = await self.call(
            "POST", f"/subjects/{_path(subject)}/versions", {**body, "id": schema_id, "version": version}
        )
        if (answer or {}).get("id") != schema_id:
            raise DestinationError(f"{subject} version {version}: the destination answered {answer}, not {schema_id}")
        return True

    async def delete_version(self, subject: str, version: int, *, permanent: bool) -> None:
        """Soft-delete (or, ``permanent``, hard-delete) a version; already gone (or soft-deleted) is done."""
        path = f"/subjects/{_path(subject)}/versions/{version}"
        try:
            if permanent:
                try:
                    await self.call("DELETE", path)  # a hard delete needs a soft one first
                except DestinationCallError as e:
                    if e.code != 40406:
                        raise
                await self.call("DELETE", path, params={"permanent": "true"})
            else:
                await self.call("DELETE", path)
        except DestinationCallError as e:
            if e.code not in _GONE | {40406}:
                raise

    async def delete_subject(self, subject: str, *, permanent: bool) -> None:
        try:
            params = {"permanent": "true"} if permanent else None
            await self.call("DELETE", f"/subjects/{_path(subject)}", params=params)
        except DestinationCallError as e:
            if e.code not in _GONE | {40404, 40405}:
                raise

    async def put_config(self, subject: str | None, config: dict[str, Any], *, look_first: bool = False) -> None:
        path = "/config" if subject is None else f"/config/{_path(subject)}"
        wanted = {k: v for k, v in config.items() if k != "subject"}
        if look_first:
            current = await self._current(path)
            if isinstance(current, dict) and all(current.get(k) == v for k, v in wanted.items()):
                return
        body = {("compatibility" if k == "compatibilityLevel" else k): v for k, v in wanted.items()}
        await self.call("PUT", path, body)

    async def _current(self, path: str, field: str | None = None) -> Any:
        """What the destination has at a config or mode path (its own, not the global default); None if
        nothing."""
        try:
            found = await self.call("GET", path)
        except DestinationCallError as e:
            if e.code in _GONE | {40408, 40409}:
                return None
            raise
        return (found or {}).get(field) if field is not None else found

    async def delete_config(self, subject: str | None) -> None:
        try:
            await self.call("DELETE", "/config" if subject is None else f"/config/{_path(subject)}")
        except DestinationCallError as e:
            if e.code not in _GONE | {40408}:
                raise


class DestinationCallError(DestinationError):
    """The destination answered with an error."""

    def __init__(self, method: str, url: str, response: httpx.Response) -> None:
        try:
            body = response.json()
        except ValueError:
            body = {}
        self.status = response.status_code
        self.code: int = body.get("error_code", response.status_code) if isinstance(body, dict) else self.status
        message = body.get("message") if isinstance(body, dict) else None
        super().__init__(f"{method} {url}: {self.status} {self.code} {message or response.text[:300]}")
