"""What ``RegistryClient`` and ``AsyncRegistryClient`` share before any I/O: their arguments (URLs, auth, TLS,
retries, caches), confluent-kafka's configuration keys translated to those arguments (``from_config``), and the
httpx options both transports are built with.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any, Self
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from serdes.auth import BearerAuth, CustomBearerAuth, OAuthClientCredentials
from serdes.caches import DEFAULT_CAPACITY
from serdes.registry_api import ACCEPT, RegistryApi
from serdes.transport import run_sync

__all__ = ["ClientSettings"]

Auth = tuple[str, str] | httpx.Auth


def _split_urls(url: str | Sequence[str]) -> list[str]:
    urls = [u.strip() for u in url.split(",")] if isinstance(url, str) else [u.strip() for u in url]
    urls = [u.rstrip("/") for u in urls if u]
    if not urls:
        raise ValueError("RegistryClient needs at least one registry URL")
    for u in urls:
        if not u.startswith(("http://", "https://")) and _plugin_transport(u) is None:
            raise ValueError(
                f"registry URL {u!r} must start with http:// or https:// (or mock:// for the in-process registry)"
            )
    return urls


TRANSPORT_ENTRY_POINTS = "schemakit.registry_transports"


def _plugin_transport(url: str) -> Callable[[str, bool], Any] | None:
    """The transport factory for a URL scheme other than HTTP(S), from the ``schemakit.registry_transports``
    entry points (``mock`` is the in-process registry, shipped with the ``registry`` package)."""
    scheme = url.partition(":")[0]
    for ep in entry_points(group=TRANSPORT_ENTRY_POINTS):
        if ep.name == scheme:
            factory: Callable[[str, bool], Any] = ep.load()
            return factory
    return None


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
        unquote(parts.username),
        unquote(parts.password or ""),
    )


def _user_info(info: str) -> tuple[str, str]:
    if ":" not in info:
        raise ValueError("basic auth user info must be 'user:password'")
    user, _, password = info.partition(":")
    return user, password


def ssl_context(
    verify: bool | str, cert: str | tuple[str, str] | None, key_password: str | None
) -> ssl.SSLContext | bool:
    """httpx's ``verify``: True/False as given, else a context with the CA bundle (a file or a directory) and the
    client certificate and key for mutual TLS."""
    if cert is None and isinstance(verify, bool):
        return verify
    if isinstance(verify, str):
        ctx = (
            ssl.create_default_context(capath=verify)
            if os.path.isdir(verify)
            else ssl.create_default_context(cafile=verify)
        )
    else:
        ctx = ssl.create_default_context()
    if verify is False:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert is not None:
        certfile, keyfile = (cert, None) if isinstance(cert, str) else cert
        ctx.load_cert_chain(certfile, keyfile, key_password)
    return ctx


def _number(conf: dict[str, Any], key: str) -> float | None:
    value = conf.pop(key, None)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise TypeError(f"{key} must be a number, not {type(value).__name__}")
    return value


def _required(conf: dict[str, Any], source: str, *keys: str) -> list[Any]:
    missing = [k for k in keys if conf.get(k) in (None, "")]
    if missing:
        raise ValueError(f"bearer.auth.credentials.source {source} needs {', '.join(missing)}")
    return [conf.pop(k) for k in keys]


def _bearer_from_config(conf: dict[str, Any], settings: dict[str, Any]) -> httpx.Auth | None:
    source = conf.pop("bearer.auth.credentials.source", None)
    if source is None:
        return None
    cloud = {
        "logical_cluster": conf.pop("bearer.auth.logical.cluster", None),
        "identity_pool_id": conf.pop("bearer.auth.identity.pool.id", None),
    }
    if source == "STATIC_TOKEN":
        (token,) = _required(conf, source, "bearer.auth.token")
        return BearerAuth(token, **cloud)
    if source == "OAUTHBEARER":
        url, client_id, secret = _required(
            conf, source, "bearer.auth.issuer.endpoint.url", "bearer.auth.client.id", "bearer.auth.client.secret"
        )
        retries = {
            k: settings[k] for k in ("max_retries", "retry_backoff", "retry_max_backoff", "timeout") if k in settings
        }
        return OAuthClientCredentials(url, client_id, secret, conf.pop("bearer.auth.scope", None), **cloud, **retries)
    if source == "CUSTOM":
        function, config = _required(
            conf, source, "bearer.auth.custom.provider.function", "bearer.auth.custom.provider.config"
        )
        return CustomBearerAuth(function, config)
    raise ValueError(f"unsupported bearer.auth.credentials.source {source!r} (use STATIC_TOKEN, OAUTHBEARER or CUSTOM)")


def settings_from_config(conf: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(url, keyword arguments) from confluent-kafka's ``SchemaRegistryClient`` configuration dict."""
    conf = dict(conf)
    if "url" not in conf:
        raise ValueError("missing required configuration property url")
    url = conf.pop("url")
    kwargs: dict[str, Any] = {}
    for key, arg, scale in (
        ("timeout", "timeout", 1.0),
        ("max.retries", "max_retries", None),
        ("retries.wait.ms", "retry_backoff", 1000.0),
        ("retries.max.wait.ms", "retry_max_backoff", 1000.0),
        ("cache.capacity", "cache_capacity", None),
        ("cache.latest.ttl.sec", "latest_ttl", 1.0),
    ):
        value = _number(conf, key)
        if value is not None:
            kwargs[arg] = int(value) if scale is None else value / scale
    source = conf.pop("basic.auth.credentials.source", None)
    info = conf.pop("basic.auth.user.info", None)
    if source not in (None, "USER_INFO", "URL"):
        raise ValueError(f"unsupported basic.auth.credentials.source {source!r} (use USER_INFO or URL)")
    if source == "USER_INFO" and not info:
        raise ValueError("basic.auth.credentials.source USER_INFO needs basic.auth.user.info")
    if info and source != "URL":
        kwargs["user_info"] = info
    bearer = _bearer_from_config(conf, kwargs)
    if bearer is not None:
        if info:
            raise ValueError("configure basic.auth.user.info or bearer.auth.credentials.source, not both")
        kwargs["auth"] = bearer
    ca = conf.pop("ssl.ca.location", None)
    if ca is not None:
        kwargs["verify"] = ca
    cert = conf.pop("ssl.certificate.location", None)
    key = conf.pop("ssl.key.location", None)
    password = conf.pop("ssl.key.password", None)
    if (key is not None or password is not None) and cert is None:
        raise ValueError("ssl.certificate.location is required with ssl.key.location or ssl.key.password")
    if cert is not None:
        kwargs["cert"] = (cert, key) if key else cert
        kwargs["key_password"] = password
    if "proxy" in conf:
        kwargs["proxy"] = conf.pop("proxy")
    if conf:
        raise ValueError(f"unsupported registry client configuration: {', '.join(sorted(conf))}")
    return url, kwargs


class ClientSettings:
    """The arguments both registry clients take, checked once; ``_api`` holds the I/O-free calls and caches.

    Args:
        url: one URL, a comma-separated list, or a sequence of URLs (one cluster; several = failover).
            ``http://user:pass@host`` sets basic auth.
        auth: ``(user, password)`` for HTTP basic auth, or an ``httpx.Auth``: ``serdes.BearerAuth`` (static token),
            ``serdes.OAuthClientCredentials`` (OAuth 2 client credentials), or any other.
        user_info: ``"user:password"``, the same as ``auth=(user, password)``.
        timeout: seconds per request.
        max_retries: extra rounds over all URLs after the first, for retriable failures (408/429/5xx, no answer).
        retry_backoff / retry_max_backoff: full-jitter exponential backoff between rounds, in seconds.
        cache_capacity: entries per cache (confluent-kafka's ``cache.capacity``); every cache is an LRU this size.
        latest_ttl: seconds latest-version answers are reused (``cache.latest.ttl.sec``); None = until evicted,
            0 = never.
        verify: TLS server verification: True, False, or a CA bundle path (file or directory).
        cert: client certificate for mutual TLS: a PEM path holding cert and key, or ``(cert_path, key_path)``;
            ``key_password`` decrypts the key.
        headers: extra HTTP headers sent with every request.
        proxy: an HTTP(S) proxy URL.
    """

    def __init__(
        self,
        url: str | Sequence[str],
        *,
        auth: Auth | None = None,
        user_info: str | None = None,
        timeout: float = 10.0,
        max_retries: int = 3,
        retry_backoff: float = 0.1,
        retry_max_backoff: float = 5.0,
        cache_capacity: int = DEFAULT_CAPACITY,
        latest_ttl: float | None = 60.0,
        verify: bool | str = True,
        cert: str | tuple[str, str] | None = None,
        key_password: str | None = None,
        headers: dict[str, str] | None = None,
        proxy: str | None = None,
    ) -> None:
        urls = []
        url_auth = None
        split = _split_urls(url)
        plugin = _plugin_transport(split[0]) if not split[0].startswith(("http://", "https://")) else None
        if plugin is not None:  # mock://: the registry in-process, reached through its own transport
            if len(split) > 1:
                raise ValueError(f"{split[0]} cannot be combined with other URLs")
            name = split[0].partition(":")[2].strip("/")
            split = [f"http://{split[0].partition(':')[0]}" + (f".{name}" if name else "")]
        for u in split:
            clean, creds = _strip_userinfo(u)
            urls.append(clean)
            url_auth = url_auth or creds
        if user_info is not None:
            if auth is not None:
                raise ValueError("give auth or user_info, not both")
            auth = _user_info(user_info)
        if auth is not None and url_auth is not None:
            raise ValueError("credentials are given both in the URL and as auth/user_info: remove one")
        auth = auth or url_auth
        self._auth: httpx.Auth | None = httpx.BasicAuth(*auth) if isinstance(auth, tuple) else auth
        self._api = RegistryApi(
            urls,
            max_retries=max_retries,
            retry_backoff=retry_backoff,
            retry_max_backoff=retry_max_backoff,
            cache_capacity=cache_capacity,
            latest_ttl=latest_ttl,
        )
        self._http_options: dict[str, Any] = {
            "timeout": timeout,
            "verify": ssl_context(verify, cert, key_password),
            "auth": self._auth,
            "headers": {"Accept": ACCEPT, "User-Agent": "schemakit-serdes", **(headers or {})},
            "limits": httpx.Limits(max_keepalive_connections=20, keepalive_expiry=60.0),
            "proxy": proxy,
        }
        self._plugin: tuple[Callable[[str, bool], Any], str] | None = None
        if plugin is not None:
            self._plugin = (plugin, url if isinstance(url, str) else url[0])
            self._http_options["transport"] = plugin(self._plugin[1], self._is_async)
        self._blocking_http: httpx.Client | None = None
        self._open(self._http_options)

    _is_async = False
    _http: Any  # the client's own httpx client (sync or async), made by ``_open``

    def _open(self, http_options: dict[str, Any]) -> None:
        """Create the transport (an httpx client built with ``http_options``)."""
        raise NotImplementedError

    def request_blocking(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        """One API call that blocks, whichever client this is: what encryption rules use to reach the DEK
        registry from inside a record's (synchronous) rule run. An async client makes a sync httpx client with
        its own options for it on first use (``close_blocking`` closes it)."""
        http = self._blocking_http if self._is_async else self._http
        if http is None:
            options = dict(self._http_options)
            if self._plugin is not None:
                options["transport"] = self._plugin[0](self._plugin[1], False)
            http = self._blocking_http = httpx.Client(**options)
        return run_sync(http, self._api.exchange(method, path, body, params))

    def close_blocking(self) -> None:
        if self._blocking_http is not None:
            self._blocking_http.close()
            self._blocking_http = None

    @classmethod
    def from_config(cls, conf: dict[str, Any]) -> Self:
        """Build from confluent-kafka's ``SchemaRegistryClient`` configuration dict: ``url``,
        ``basic.auth.credentials.source`` (USER_INFO, URL), ``basic.auth.user.info``,
        ``bearer.auth.credentials.source`` (STATIC_TOKEN, OAUTHBEARER, CUSTOM) with ``bearer.auth.token``,
        ``bearer.auth.issuer.endpoint.url``, ``bearer.auth.client.id``, ``bearer.auth.client.secret``,
        ``bearer.auth.scope``, ``bearer.auth.logical.cluster``, ``bearer.auth.identity.pool.id``,
        ``bearer.auth.custom.provider.function`` / ``.config``; ``ssl.ca.location``, ``ssl.certificate.location``,
        ``ssl.key.location``, ``ssl.key.password``, ``proxy``, ``timeout``, ``cache.capacity``,
        ``cache.latest.ttl.sec``, ``max.retries``, ``retries.wait.ms``, ``retries.max.wait.ms``.
        Unknown keys raise ``ValueError`` naming them."""
        url, kwargs = settings_from_config(conf)
        return cls(url, **kwargs)

    @property
    def urls(self) -> list[str]:
        return self._api.urls

    @property
    def preferred_url(self) -> str:
        """The URL requests go to first (the one that answered last)."""
        return self._api.urls[self._api.preferred]

    @property
    def max_retries(self) -> int:
        return self._api.max_retries

    @property
    def retry_backoff(self) -> float:
        return self._api.retry_backoff

    @property
    def retry_max_backoff(self) -> float:
        return self._api.retry_max_backoff

    @property
    def latest_ttl(self) -> float | None:
        return self._api.latest_ttl

    @property
    def cache_capacity(self) -> int:
        return self._api.cache_capacity

    @property
    def auth(self) -> httpx.Auth | None:
        return self._auth
