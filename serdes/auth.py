"""Authentication for the registry clients: a static bearer token, OAuth 2 client credentials, a custom
bearer provider (HTTP basic auth is httpx's ``BasicAuth``). Each is an ``httpx.Auth``, so the same object works
for ``RegistryClient`` and ``AsyncRegistryClient``.

Bearer tokens go out as ``Authorization: Bearer <token>`` with Confluent Cloud's routing headers when configured:
``target-sr-cluster`` (the logical cluster) and ``Confluent-Identity-Pool-Id``, as confluent-kafka sends them.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from collections.abc import AsyncGenerator, Callable, Generator, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import orjson

from serdes.errors import OAuthTokenError
from serdes.registry_api import RETRIABLE, Call, HttpRequest, Sleep, backoff_delay
from serdes.transport import run_async, run_sync

__all__ = ["BearerAuth", "CustomBearerAuth", "OAuthClientCredentials"]


def _pool_id(identity_pool_id: str | Sequence[str] | None) -> str | None:
    """One identity pool id or several (joined with commas, as confluent-kafka sends them)."""
    if identity_pool_id is None or isinstance(identity_pool_id, str):
        return identity_pool_id
    return ",".join(identity_pool_id)


def _authorize(request: httpx.Request, token: str, logical_cluster: str | None, identity_pool_id: str | None) -> None:
    request.headers["Authorization"] = f"Bearer {token}"
    if logical_cluster:
        request.headers["target-sr-cluster"] = logical_cluster
    if identity_pool_id:
        request.headers["Confluent-Identity-Pool-Id"] = identity_pool_id


class BearerAuth(httpx.Auth):
    """A static bearer token (confluent-kafka's ``bearer.auth.credentials.source=STATIC_TOKEN``)."""

    def __init__(
        self, token: str, logical_cluster: str | None = None, identity_pool_id: str | Sequence[str] | None = None
    ) -> None:
        if not token:
            raise ValueError("BearerAuth needs a token")
        self.token = token
        self.logical_cluster = logical_cluster
        self.identity_pool_id = _pool_id(identity_pool_id)

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        _authorize(request, self.token, self.logical_cluster, self.identity_pool_id)
        yield request


class CustomBearerAuth(httpx.Auth):
    """Bearer fields from a function called before every request (confluent-kafka's ``CUSTOM`` source):
    ``function(config)`` returns a dict with ``bearer.auth.token`` and optionally ``bearer.auth.logical.cluster``
    and ``bearer.auth.identity.pool.id``."""

    def __init__(self, function: Callable[[dict], dict], config: dict) -> None:
        if not callable(function):
            raise TypeError(f"bearer.auth.custom.provider.function must be callable, not {type(function).__name__}")
        self.function = function
        self.config = config

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        fields = self.function(self.config)
        token = fields.get("bearer.auth.token")
        if not token:
            raise OAuthTokenError(-1, -1, "the custom bearer provider returned no 'bearer.auth.token'")
        _authorize(
            request,
            token,
            fields.get("bearer.auth.logical.cluster"),
            _pool_id(fields.get("bearer.auth.identity.pool.id")),
        )
        yield request


class OAuthClientCredentials(httpx.Auth):
    """OAuth 2 client-credentials grant (confluent-kafka's ``OAUTHBEARER`` source).

    The access token is fetched from ``token_url`` (``POST grant_type=client_credentials[&scope=...]``, client id
    and secret as HTTP basic auth, RFC 6749 §4.4) on first use, and fetched again once ``refresh_ratio`` (0.8, as
    confluent-kafka) of its ``expires_in`` has passed, so requests never carry an expired token. One fetch runs
    at a time per object (a thread lock for sync clients, an asyncio lock for async ones); the others wait for
    it and use its token. A registry answer of 401 gets one more try with a newly fetched token. The token endpoint
    is retried like the registry (transport errors, 408/429/5xx; ``max_retries`` extra tries, full-jitter
    backoff); when it cannot give a token, the request fails with ``OAuthTokenError``.

    Args:
        verify: TLS verification for the token endpoint (True, False or a CA bundle path).
        clock: seconds, monotonic (for tests).
    """

    def __init__(
        self,
        token_url: str,
        client_id: str,
        client_secret: str,
        scope: str | None = None,
        *,
        logical_cluster: str | None = None,
        identity_pool_id: str | Sequence[str] | None = None,
        timeout: float = 10.0,
        verify: bool | str = True,
        max_retries: int = 3,
        retry_backoff: float = 0.1,
        retry_max_backoff: float = 5.0,
        refresh_ratio: float = 0.8,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not token_url.startswith(("http://", "https://")):
            raise ValueError(f"OAuth token endpoint {token_url!r} must start with http:// or https://")
        if not 0 < refresh_ratio <= 1:
            raise ValueError(f"refresh_ratio must be in (0, 1], not {refresh_ratio}")
        self.token_url = token_url
        self.client_id = client_id
        self.scope = scope
        self.logical_cluster = logical_cluster
        self.identity_pool_id = _pool_id(identity_pool_id)
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self.retry_max_backoff = retry_max_backoff
        self.refresh_ratio = refresh_ratio
        self._clock = clock
        self._timeout = timeout
        self._verify = verify
        credentials = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}".encode()
        self._request = HttpRequest(
            "POST",
            token_url,
            urlencode({"grant_type": "client_credentials", **({"scope": scope} if scope else {})}).encode(),
            {
                "Authorization": "Basic " + base64.b64encode(credentials).decode("ascii"),
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
        )
        self._token: str | None = None
        self._refresh_at = 0.0
        self._lock = threading.Lock()
        self._alock: asyncio.Lock | None = None
        self._http: httpx.Client | None = None
        self._ahttp: httpx.AsyncClient | None = None

    # -- the token, without I/O --------------------------------------------------------------------------

    def current_token(self) -> str | None:
        """The token if it is not yet due for refresh, else None."""
        token = self._token
        return token if token is not None and self._clock() < self._refresh_at else None

    def fetch(self) -> Call[str]:
        """Fetch a new token (a ``registry_api`` call: yields the requests and sleeps, returns the token)."""
        failure = ""
        status = -1
        for attempt in range(self.max_retries + 1):
            if attempt:
                yield Sleep(backoff_delay(attempt - 1, self.retry_backoff, self.retry_max_backoff))
            reply = yield self._request
            if isinstance(reply, BaseException):
                failure, status = f"{type(reply).__name__}: {reply}", -1
                continue
            status, content = reply
            if status in RETRIABLE:
                failure = f"HTTP {status}: {content[:200].decode('utf-8', 'replace')}"
                continue
            return self._accept(status, content)
        raise OAuthTokenError(
            status,
            -1,
            f"OAuth token endpoint {self.token_url} gave no token after {self.max_retries + 1} tries ({failure})",
        )

    def _accept(self, status: int, content: bytes) -> str:
        try:
            body = orjson.loads(content)
        except orjson.JSONDecodeError:
            body = None
        if status >= 300 or not isinstance(body, dict):
            detail = body.get("error_description") or body.get("error") if isinstance(body, dict) else None
            raise OAuthTokenError(
                status,
                -1,
                f"OAuth token endpoint {self.token_url} refused the client "
                f"credentials of {self.client_id!r}: HTTP {status}: "
                f"{detail or content[:200].decode('utf-8', 'replace')}",
            )
        token = body.get("access_token")
        if not isinstance(token, str) or not token:
            raise OAuthTokenError(
                status,
                -1,
                f"OAuth token endpoint {self.token_url} answered without an "
                f"access_token (keys: {', '.join(sorted(body))})",
            )
        try:
            lifetime = float(body["expires_in"])
        except (KeyError, TypeError, ValueError):
            lifetime = float("inf")  # no expiry given: kept until the registry answers 401
        self._token = token
        self._refresh_at = self._clock() + lifetime * self.refresh_ratio
        return token

    def _needs_fetch(self, stale: str | None) -> bool:
        return self.current_token() is None or (stale is not None and self._token == stale)

    # -- the two auth flows httpx runs ---------------------------------------------------------------------

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self.current_token() or self._token_sync(None)
        _authorize(request, token, self.logical_cluster, self.identity_pool_id)
        response = yield request
        if response.status_code == 401:
            _authorize(request, self._token_sync(token), self.logical_cluster, self.identity_pool_id)
            yield request

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        token = self.current_token() or await self._token_async(None)
        _authorize(request, token, self.logical_cluster, self.identity_pool_id)
        response = yield request
        if response.status_code == 401:
            _authorize(request, await self._token_async(token), self.logical_cluster, self.identity_pool_id)
            yield request

    def _token_sync(self, stale: str | None) -> str:
        with self._lock:
            if self._needs_fetch(stale):
                if self._http is None:
                    self._http = httpx.Client(timeout=self._timeout, verify=self._verify)
                return run_sync(self._http, self.fetch())
            assert self._token is not None
            return self._token

    async def _token_async(self, stale: str | None) -> str:
        if self._alock is None:
            self._alock = asyncio.Lock()
        async with self._alock:
            if self._needs_fetch(stale):
                if self._ahttp is None:
                    self._ahttp = httpx.AsyncClient(timeout=self._timeout, verify=self._verify)
                return await run_async(self._ahttp, self.fetch())
            assert self._token is not None
            return self._token

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    async def aclose(self) -> None:
        self.close()
        if self._ahttp is not None:
            await self._ahttp.aclose()
            self._ahttp = None


def close_auth(auth: Any) -> None:
    """Release what an auth object holds (the OAuth token endpoint's connections), if anything."""
    close = getattr(auth, "close", None)
    if callable(close):
        close()


async def aclose_auth(auth: Any) -> None:
    aclose = getattr(auth, "aclose", None)
    if callable(aclose):
        await aclose()
    else:
        close_auth(auth)
