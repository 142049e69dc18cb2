"""Forwarding writes from a follower to the leader over HTTP, as Confluent's followers do.

``RegistryRoute`` (``registry/http/routing.py``) asks ``Forwarder.maybe_forward`` before every write route:
the leader executes locally (``None``); a follower sends the request (caller's headers, raw path and query,
body) to the announced leader and answers with the leader's status and body unchanged. A follower then
waits, briefly, until its own reader has applied the leader's record (the leader says which offset in
``X-Schemakit-Offset``), so a client that reads from the same follower right after sees its write.

While no leader is known, or the announced one does not accept connections (it died and the group has not
elected the next one yet), or it answers 50004 (it no longer leads: nothing was written), a write waits up
to ``leader_wait`` for a usable leader before it fails with 50004 (no leader) or 50003 (forwarding failed):
an election then costs callers latency, not errors. Every failure to reach the leader is reported to the
election (``LeaderView.leader_unreachable``), which may then replace a leader that is gone. Reads never come
here and never wait.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Sequence
from typing import Any, Protocol

import httpx
import orjson

from registry import errors
from registry.security.forwarded import FORWARDED_HEADER
from registry.store import LogStore, Store

log = logging.getLogger(__name__)

OFFSET_HEADER = b"x-schemakit-offset"


def offset_header(store: LogStore[Any], main: Store) -> bytes:
    """The header that carries ``store``'s applied offset: ``OFFSET_HEADER`` for ``_schemas``, the topic's
    name appended for the other stores (the DEK registry's)."""
    return OFFSET_HEADER if store is main else OFFSET_HEADER + b"-" + store.topic.encode()


# Hop-by-hop and framing headers belong to each connection, not to the request.
_DROP_HEADERS = frozenset(
    {
        b"host",
        b"content-length",
        b"connection",
        b"keep-alive",
        b"transfer-encoding",
        b"te",
        b"trailer",
        b"upgrade",
        b"proxy-authorization",
        b"proxy-connection",
        b"accept-encoding",
        FORWARDED_HEADER,
    }
)


class LeaderView(Protocol):
    is_leader: bool

    @property
    def leader_url(self) -> str | None: ...

    def leader_unreachable(self, url: str) -> None:
        """A request to the leader at ``url`` failed in transport (refused, reset, timed out)."""
        ...


def _not_leader(status: int, content: bytes) -> bool:
    """The answer of a node that does not (or no longer) lead: it wrote nothing, so the request may go again."""
    if status != 500:
        return False
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        return False
    return isinstance(body, dict) and body.get("error_code") == errors.ErrorCode.UNKNOWN_LEADER


def operation_name(method: str, raw_path: bytes) -> str:
    """Confluent's wording for the operation in its forwarding error messages."""
    segments = [s for s in raw_path.split(b"/") if s]
    first = segments[0] if segments else b""
    if first == b"subjects":
        if method == "POST":
            return "register schema"
        return "delete schema version" if len(segments) > 3 else "delete subject"
    if first in (b"config", b"mode"):
        what = "config" if first == b"config" else "mode"
        return f"{'update' if method == 'PUT' else 'delete'} {what}"
    return f"{method} {raw_path.decode('latin-1')}"


class Forwarder:
    def __init__(
        self,
        election: LeaderView,
        store: Store,
        own_url: str,
        *,
        timeout: float,
        leader_wait: float,
        tls: ssl.SSLContext | bool = True,
        more_stores: Sequence[LogStore[Any]] = (),
    ) -> None:
        """``more_stores``: the other stores the leader writes; a forwarded write waits for each of them too."""
        self.election = election
        self.tls = tls  # verification of an https leader (and this node's client certificate)
        self.store = store
        self.stores: tuple[LogStore[Any], ...] = (store, *more_stores)
        self.own_url = own_url.rstrip("/")
        self.timeout = timeout
        self.leader_wait = leader_wait
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            # One keep-alive pool for the whole process (created on the event loop that uses it).
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=5.0), trust_env=False, verify=self.tls
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def maybe_forward(
        self,
        method: str,
        raw_path: bytes,
        query_string: bytes,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
    ) -> tuple[int, bytes] | None:
        if self.election.is_leader:
            return None
        if any(k == FORWARDED_HEADER for k, _ in headers):
            # Forward at most once: a follower sent this here believing we lead, and we no longer do.
            raise errors.leader_not_known()
        # During an election, a write waits (up to ``leader_wait``) for the next leader instead of failing.
        deadline = time.monotonic() + self.leader_wait
        while True:
            leader = self.election.leader_url
            # A node that was just deposed still sees its own announcement until the next one arrives.
            usable = leader is not None and leader.rstrip("/") != self.own_url
            if usable:
                assert leader is not None
                try:
                    status, content = await self._forward(leader, method, raw_path, query_string, headers, body)
                except httpx.ConnectError as e:
                    # Nothing was sent: the leader is gone. A new one may be announced shortly.
                    self.election.leader_unreachable(leader)
                    if time.monotonic() >= deadline:
                        raise self._failed(method, raw_path, leader, e) from e
                except httpx.HTTPError as e:  # the request may have reached the leader: do not repeat it
                    self.election.leader_unreachable(leader)
                    raise self._failed(method, raw_path, leader, e) from e
                else:
                    if not _not_leader(status, content) or time.monotonic() >= deadline:
                        return status, content
            elif time.monotonic() >= deadline:
                raise errors.leader_not_known()
            await asyncio.sleep(0.05)
            if self.election.is_leader:
                return None

    def _failed(self, method: str, raw_path: bytes, leader: str, e: Exception) -> errors.ApiError:
        log.warning("forwarding %s %s to the leader %s failed: %s", method, raw_path.decode("latin-1"), leader, e)
        return errors.forwarding_failed(
            f"Error while forwarding {operation_name(method, raw_path)} request to the leader"
        )

    async def _forward(
        self,
        leader: str,
        method: str,
        raw_path: bytes,
        query_string: bytes,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
    ) -> tuple[int, bytes]:
        url = leader.rstrip("/") + raw_path.decode("latin-1")
        if query_string:
            url += "?" + query_string.decode("latin-1")
        out_headers = [(k, v) for k, v in headers if k.lower() not in _DROP_HEADERS]
        out_headers.append((FORWARDED_HEADER, b"1"))
        resp = await self._http().request(method, url, headers=out_headers, content=body)
        content = resp.content
        if resp.status_code in (200, 204):
            for store in self.stores:
                offset = resp.headers.get(offset_header(store, self.store).decode())
                if offset is not None and offset.lstrip("-").isdigit():
                    # Not reaching it in time is no error: the leader has it, our replica is only slow to show it.
                    await store.applied.wait(int(offset), store.timeout)
        return resp.status_code, content


class LeaderOffsetHeader:
    """ASGI wrapper on every node: answers to forwarded requests carry this node's applied offset, which
    covers the write just made (the leader answers only once its reader has applied it)."""

    def __init__(self, app: Any, store: Store, *more_stores: LogStore[Any]) -> None:
        self.app = app
        self.store = store
        self.stores: tuple[LogStore[Any], ...] = (store, *more_stores)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not any(k == FORWARDED_HEADER for k, _ in scope["headers"]):
            await self.app(scope, receive, send)
            return

        async def send_with_offset(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or ())
                for store in self.stores:
                    headers.append((offset_header(store, self.store), str(store.applied.offset).encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_offset)
