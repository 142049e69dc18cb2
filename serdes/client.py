"""``RegistryClient``: a synchronous client for the Confluent Schema Registry REST API (v1).

One ``httpx.Client`` (keep-alive pool) serves every URL. Requests go to the URL that last answered; a
connection failure moves on to the next URL at once, and 408/429/5xx answers or transport errors are retried
in rounds over all URLs with full-jitter exponential backoff between rounds. Other 4xx answers raise
``RegistryError`` at once. Results that never change (id -> schema, (subject, schema) -> id) are cached
forever; the latest version of a subject is cached for ``latest_ttl`` seconds. Safe to share between threads.
"""

from __future__ import annotations

import random
import ssl
import threading
import time
from collections.abc import Sequence
from typing import Any, TypeVar
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import httpx
import orjson

from serdes.errors import RegistryError, RegistryUnavailableError
from serdes.models import RegisteredSchema, Schema

__all__ = ["RegistryClient"]

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
_RETRIABLE = frozenset({408, 429, 500, 502, 503, 504})


def _split_urls(url: str | Sequence[str]) -> list[str]:
    urls = [u.strip() for u in url.split(",")] if isinstance(url, str) else [u.strip() for u in url]
    urls = [u.rstrip("/") for u in urls if u]
    if not urls:
        raise ValueError("RegistryClient needs at least one registry URL")
    for u in urls:
        if not u.startswith(("http://", "https://")):
            raise ValueError(f"registry URL {u!r} must start with http:// or https://")
    return urls


def _strip_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """Take ``user:password@`` out of a URL (so it is never logged) and return it as basic-auth credentials."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)), (
        unquote(parts.username), unquote(parts.password or ""))


_Key = TypeVar("_Key", bound=tuple)


def _drop_subject(cache: dict[_Key, Any], subject: str) -> None:
    """Remove a cache's entries for ``subject`` (the first element of their keys)."""
    for key in [k for k in cache if k[0] == subject]:
        del cache[key]


def _seg(value: str | int) -> str:
    return quote(str(value), safe="")


class RegistryClient:
    """Client for one registry cluster (several URLs = the same cluster, used for failover).

    Args:
        url: one URL, a comma-separated list, or a sequence of URLs. ``http://user:pass@host`` sets basic auth.
        auth: ``(user, password)`` for HTTP basic auth; ``user_info="user:password"`` is the same as a string.
        timeout: seconds per request.
        max_retries: extra rounds over all URLs after the first, for retriable failures.
        retry_backoff: base of the full-jitter exponential backoff, in seconds (round ``n`` sleeps
            ``uniform(0, min(retry_max_backoff, retry_backoff * 2**n))``).
        latest_ttl: seconds a ``get_latest_version`` answer is reused; ``None`` = until restart, 0 = never.
        verify: TLS server verification: True, False, or a CA bundle path.
        cert: client certificate: a PEM path holding cert and key, or ``(cert_path, key_path)``;
            ``key_password`` decrypts the key.
        headers: extra HTTP headers sent with every request.
    """

    def __init__(self, url: str | Sequence[str], *, auth: tuple[str, str] | None = None,
                 user_info: str | None = None, timeout: float = 10.0, max_retries: int = 3,
                 retry_backoff: float = 0.1, retry_max_backoff: float = 5.0, latest_ttl: float | None = 60.0,
                 verify: bool | str = True, cert: str | tuple[str, str] | None = None,
                 key_password: str | None = None, headers: dict[str, str] | None = None) -> None:
        urls = []
        url_auth = None
        for u in _split_urls(url):
            clean, creds = _strip_userinfo(u)
            urls.append(clean)
            url_auth = url_auth or creds
        if user_info is not None:
            if ":" not in user_info:
                raise ValueError("user_info must be 'user:password'")
            user, _, password = user_info.partition(":")
            auth = (user, password)
        self.urls: list[str] = urls
        self._auth = auth or url_auth
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self.retry_max_backoff = retry_max_backoff
        self.latest_ttl = latest_ttl
        self._preferred = 0  # index of the URL that answered last
        self._http = httpx.Client(
            timeout=timeout, verify=self._ssl_context(verify, cert, key_password),
            auth=httpx.BasicAuth(*self._auth) if self._auth else None,
            headers={"Accept": _ACCEPT, "User-Agent": "schemakit-serdes", **(headers or {})},
            limits=httpx.Limits(max_keepalive_connections=20, keepalive_expiry=60.0),
        )
        self._lock = threading.Lock()
        self._by_id: dict[tuple[int, str | None], Schema] = {}
        self._ids: dict[tuple[str, Schema, bool], RegisteredSchema] = {}
        self._lookups: dict[tuple[str, Schema, bool], RegisteredSchema] = {}
        self._versions: dict[tuple[str, int, str | None], RegisteredSchema] = {}
        self._latest: dict[str, tuple[float, RegisteredSchema]] = {}

    @classmethod
    def from_config(cls, conf: dict[str, Any]) -> RegistryClient:
        """Build from confluent-kafka's ``SchemaRegistryClient`` configuration keys."""
        conf = dict(conf)
        kwargs: dict[str, Any] = {}
        url = conf.pop("url")
        source = conf.pop("basic.auth.credentials.source", "USER_INFO" if "basic.auth.user.info" in conf else None)
        info = conf.pop("basic.auth.user.info", None)
        if source == "USER_INFO":
            if not info:
                raise ValueError("basic.auth.credentials.source USER_INFO needs basic.auth.user.info")
            kwargs["user_info"] = info
        elif source not in (None, "URL"):
            raise ValueError(f"unsupported basic.auth.credentials.source {source!r} (use USER_INFO or URL)")
        if "ssl.ca.location" in conf:
            kwargs["verify"] = conf.pop("ssl.ca.location")
        if "ssl.certificate.location" in conf:
            cert = conf.pop("ssl.certificate.location")
            key = conf.pop("ssl.key.location", None)
            kwargs["cert"] = (cert, key) if key else cert
        if "ssl.key.password" in conf:
            kwargs["key_password"] = conf.pop("ssl.key.password")
        for key, arg, conv in (("timeout", "timeout", float), ("max.retries", "max_retries", int),
                               ("retries.wait.ms", "retry_backoff", lambda v: v / 1000.0),
                               ("retries.max.wait.ms", "retry_max_backoff", lambda v: v / 1000.0),
                               ("cache.latest.ttl.sec", "latest_ttl", float)):
            if key in conf:
                kwargs[arg] = conv(conf.pop(key))
        conf.pop("cache.capacity", None)
        if conf:
            raise ValueError(f"unsupported registry client configuration: {', '.join(sorted(conf))}")
        return cls(url, **kwargs)

    @staticmethod
    def _ssl_context(verify: bool | str, cert: str | tuple[str, str] | None,
                     key_password: str | None) -> ssl.SSLContext | bool:
        if verify is True and cert is None:
            return True
        if verify is False and cert is None:
            return False
        ctx = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
        if verify is False:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if cert is not None:
            certfile, keyfile = (cert, None) if isinstance(cert, str) else cert
            ctx.load_cert_chain(certfile, keyfile, key_password)
        return ctx

    # -- transport -----------------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        """Send one API call with failover and retries; returns the decoded JSON body (None when empty)."""
        content = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": _CONTENT_TYPE} if content is not None else None
        if params:
            params = {k: ("true" if v is True else "false" if v is False else v)
                      for k, v in params.items() if v is not None}
        failures: list[str] = []
        last_status = -1
        last_code = -1
        n = len(self.urls)
        for attempt in range(self.max_retries + 1):
            start = self._preferred
            for k in range(n):
                i = (start + k) % n
                base = self.urls[i]
                try:
                    resp = self._http.request(method, base + path, content=content, headers=headers,
                                              params=params)
                except httpx.TransportError as e:
                    failures.append(f"{base}: {type(e).__name__}: {e}")
                    continue
                status = resp.status_code
                if status < 300:
                    self._preferred = i
                    return orjson.loads(resp.content) if resp.content else None
                code, message = self._error_body(resp)
                if status not in _RETRIABLE:
                    self._preferred = i
                    raise RegistryError(status, code, message)
                failures.append(f"{base}: HTTP {status}: {message}")
                last_status, last_code = status, code
            if attempt < self.max_retries:
                time.sleep(random.uniform(0.0, min(self.retry_max_backoff, self.retry_backoff * (2 ** attempt))))
        tried = "; ".join(failures[-2 * n:])
        raise RegistryUnavailableError(
            last_status, last_code,
            f"{method} {path} failed on every registry URL after {self.max_retries + 1} rounds ({tried})")

    @staticmethod
    def _error_body(resp: httpx.Response) -> tuple[int, str]:
        try:
            body = orjson.loads(resp.content)
            return int(body.get("error_code", -1)), str(body.get("message", resp.text))
        except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
            return -1, resp.text or resp.reason_phrase

    # -- schemas ---------------------------------------------------------------------------------------

    def register(self, subject: str, schema: Schema, normalize: bool = False) -> int:
        """Register ``schema`` under ``subject`` (or find it there); returns its global id. Cached forever."""
        return self.register_full(subject, schema, normalize).schema_id

    def register_full(self, subject: str, schema: Schema, normalize: bool = False) -> RegisteredSchema:
        """Register and return id and version. The version comes from a lookup when the server omits it."""
        key = (subject, schema, normalize)
        hit = self._ids.get(key)
        if hit is not None:
            return hit
        body = self.request("POST", f"/subjects/{_seg(subject)}/versions", schema.to_json(),
                            {"normalize": normalize})
        schema_id = int(body["id"])
        version = body.get("version")
        if version is None:
            version = self.lookup(subject, schema, normalize).version
        registered = RegisteredSchema(schema_id, schema, subject, int(version))
        with self._lock:
            self._ids[key] = registered
            self._by_id.setdefault((schema_id, None), schema)
        return registered

    def lookup(self, subject: str, schema: Schema, normalize: bool = False,
               deleted: bool = False) -> RegisteredSchema:
        """Find ``schema`` among ``subject``'s versions without registering (40401/40403 when absent)."""
        key = (subject, schema, normalize)
        hit = self._lookups.get(key)
        if hit is not None:
            return hit
        body = self.request("POST", f"/subjects/{_seg(subject)}", schema.to_json(),
                            {"normalize": normalize, "deleted": deleted or None})
        registered = RegisteredSchema(int(body["id"]), schema, body.get("subject", subject), int(body["version"]))
        with self._lock:
            self._lookups[key] = registered
        return registered

    def get_schema(self, schema_id: int, subject: str | None = None, fmt: str | None = None) -> Schema:
        """The schema with global id ``schema_id`` (``fmt="serialized"`` gives Protobuf as base64). Cached."""
        key = (schema_id, fmt)
        hit = self._by_id.get(key)
        if hit is not None:
            return hit
        body = self.request("GET", f"/schemas/ids/{int(schema_id)}", params={"subject": subject, "format": fmt})
        schema = Schema.from_json(body)
        with self._lock:
            self._by_id[key] = schema
        return schema

    def get_version(self, subject: str, version: int | str, fmt: str | None = None,
                    deleted: bool = False) -> RegisteredSchema:
        """One version of a subject (``"latest"`` is not cached; use ``get_latest_version``)."""
        cacheable = version != "latest" and not deleted
        key = (subject, int(version), fmt) if cacheable else None
        if key is not None:
            hit = self._versions.get(key)
            if hit is not None:
                return hit
        body = self.request("GET", f"/subjects/{_seg(subject)}/versions/{_seg(version)}",
                            params={"format": fmt, "deleted": deleted or None})
        registered = self._registered(body, subject)
        if key is not None:
            with self._lock:
                self._versions[key] = registered
        return registered

    def get_latest_version(self, subject: str, fmt: str | None = None) -> RegisteredSchema:
        """The newest version of ``subject``; reused for ``latest_ttl`` seconds."""
        key = subject if fmt is None else f"{subject}\x00{fmt}"
        hit = self._latest.get(key)
        now = time.monotonic()
        if hit is not None and (hit[0] is None or hit[0] > now):
            return hit[1]
        body = self.request("GET", f"/subjects/{_seg(subject)}/versions/latest", params={"format": fmt})
        registered = self._registered(body, subject)
        if self.latest_ttl != 0:
            expiry = None if self.latest_ttl is None else now + self.latest_ttl
            with self._lock:
                self._latest[key] = (expiry, registered)  # type: ignore[assignment]
        return registered

    @staticmethod
    def _registered(body: dict[str, Any], subject: str) -> RegisteredSchema:
        return RegisteredSchema(int(body["id"]), Schema.from_json(body), body.get("subject", subject),
                                int(body["version"]))

    def get_versions(self, subject: str, deleted: bool = False) -> list[int]:
        return self.request("GET", f"/subjects/{_seg(subject)}/versions", params={"deleted": deleted or None})

    def get_subjects(self, prefix: str | None = None, deleted: bool = False) -> list[str]:
        return self.request("GET", "/subjects", params={"subjectPrefix": prefix, "deleted": deleted or None})

    def get_subjects_by_id(self, schema_id: int) -> list[str]:
        return self.request("GET", f"/schemas/ids/{int(schema_id)}/subjects")

    def get_schema_types(self) -> list[str]:
        return self.request("GET", "/schemas/types")

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Soft-delete ``subject``; with ``permanent`` soft-delete then hard-delete. Drops cached entries."""
        versions = self.request("DELETE", f"/subjects/{_seg(subject)}")
        if permanent:
            versions = self.request("DELETE", f"/subjects/{_seg(subject)}", params={"permanent": True})
        self._forget(subject)
        return versions

    def delete_version(self, subject: str, version: int | str, permanent: bool = False) -> int:
        result = self.request("DELETE", f"/subjects/{_seg(subject)}/versions/{_seg(version)}",
                              params={"permanent": permanent or None})
        self._forget(subject)
        return int(result)

    def _forget(self, subject: str) -> None:
        with self._lock:
            _drop_subject(self._ids, subject)
            _drop_subject(self._lookups, subject)
            _drop_subject(self._versions, subject)
            for key in [k for k in self._latest if k.split("\x00", 1)[0] == subject]:
                del self._latest[key]

    # -- config and compatibility -------------------------------------------------------------------

    def get_compatibility(self, subject: str | None = None) -> str:
        path = f"/config/{_seg(subject)}" if subject else "/config"
        body = self.request("GET", path)
        return body.get("compatibilityLevel") or body["compatibility"]

    def set_compatibility(self, level: str, subject: str | None = None) -> str:
        path = f"/config/{_seg(subject)}" if subject else "/config"
        return self.request("PUT", path, {"compatibility": level.upper()})["compatibility"]

    def test_compatibility(self, subject: str, schema: Schema, version: int | str = "latest") -> bool:
        body = self.request("POST", f"/compatibility/subjects/{_seg(subject)}/versions/{_seg(version)}",
                            schema.to_json())
        return bool(body["is_compatible"])
