"""The registry REST API without I/O: what both ``RegistryClient`` and ``AsyncRegistryClient`` run.

Every API call is a generator (``Call[T]``) that checks the caches, builds its HTTP requests, parses the answers
and fills the caches. It does no I/O itself: it yields *effects* — an ``HttpRequest`` to send, or a ``Sleep``
between retry rounds — and is sent back the reply (``(status, body)``, or the transport exception). A client is
a thin driver of these generators over its transport: ``httpx.Client`` and ``time.sleep`` for the sync one,
``httpx.AsyncClient`` and ``asyncio.sleep`` for the async one. So failover, retries, caching, request building and
error mapping exist once, and a cache hit returns without yielding anything.

Failover and retries (``exchange``): requests go to the URL that answered last; a connection failure moves on to
the next URL at once, 408/429/5xx answers and transport errors are retried in rounds over all URLs with
full-jitter exponential backoff between rounds, other 4xx answers raise ``RegistryError`` at once.
"""

from __future__ import annotations

import random
from collections.abc import Generator, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

import orjson

from serdes.caches import DEFAULT_CAPACITY, LruCache
from serdes.errors import RegistryError, RegistryUnavailableError
from serdes.models import RegisteredSchema, Schema

__all__ = ["Call", "HttpRequest", "RegistryApi", "Sleep", "backoff_delay"]

T = TypeVar("T")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
RETRIABLE = frozenset({408, 429, 500, 502, 503, 504})
_BODY_HEADERS = {"Content-Type": CONTENT_TYPE, "Confluent-Accept-Unknown-Properties": "true"}


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """Effect: send this request; the reply sent back is ``(status, body bytes)`` or the transport exception."""

    method: str
    url: str
    content: bytes | None = None
    headers: Mapping[str, str] | None = None
    params: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Sleep:
    """Effect: wait ``seconds`` before going on (between retry rounds); the reply sent back is None."""

    seconds: float


Effect = HttpRequest | Sleep
Call = Generator[Effect, Any, T]


def backoff_delay(attempt: int, base: float, cap: float) -> float:
    """Full-jitter exponential backoff before retry round ``attempt + 1``: ``uniform(0, min(cap, base * 2**n))``."""
    return random.uniform(0.0, min(cap, base * (2**attempt)))


def _seg(value: str | int) -> str:
    return quote(str(value), safe="")


def _context_of(subject: str | None) -> str:
    """The context a subject names (``:.ctx:name`` or ``:.ctx:`` -> ``.ctx``); unqualified: the default, ``.``."""
    if subject and subject.startswith(":."):
        end = subject.find(":", 1)
        if end > 0:
            return subject[1:end]
    return "."


def _query(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Query parameters as the registry reads them: booleans spelled true/false, None left out."""
    if not params:
        return None
    return {k: ("true" if v is True else "false" if v is False else v) for k, v in params.items() if v is not None}


def _error_body(status: int, content: bytes) -> tuple[int, str]:
    """(error_code, message) from an error answer; -1 and the raw text when it is not Confluent's JSON."""
    try:
        body = orjson.loads(content)
        return int(body.get("error_code", -1)), str(body.get("message", ""))
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        return -1, content.decode("utf-8", "replace") or f"HTTP {status}"


def _registered(body: dict[str, Any], subject: str) -> RegisteredSchema:
    return RegisteredSchema(
        int(body["id"]), Schema.from_json(body), body.get("subject", subject), int(body["version"]), body.get("guid")
    )


@dataclass(eq=False)
class RegistryApi:
    """State shared by the calls of one client: its URLs, retry settings and bounded caches."""

    urls: list[str]  # the registry URLs (one cluster; several = failover), without credentials
    _: KW_ONLY
    max_retries: int = 3  # extra rounds over all URLs after the first, for retriable failures
    # Base of the full-jitter exponential backoff in seconds: round n sleeps uniform(0, min(retry_max_backoff,
    # retry_backoff * 2**n)).
    retry_backoff: float = 0.1
    retry_max_backoff: float = 5.0
    cache_capacity: int = DEFAULT_CAPACITY  # entries per cache (LRU)
    latest_ttl: float | None = 60.0  # seconds a latest-version answer is reused; None = until evicted, 0 = never
    preferred: int = field(default=0, init=False)  # index of the URL that answered last

    def __post_init__(self) -> None:
        capacity, latest_ttl = self.cache_capacity, self.latest_ttl
        # Answers that never change are kept until evicted; "latest" answers for latest_ttl seconds.
        self._by_id: LruCache[tuple[int, str | None], Schema] = LruCache(capacity)
        self._registered_ids: LruCache[tuple[str, Schema, bool], int] = LruCache(capacity)
        self._registrations: LruCache[tuple[str, Schema, bool], RegisteredSchema] = LruCache(capacity)
        self._lookups: LruCache[tuple[str, Schema, bool, bool], RegisteredSchema] = LruCache(capacity)
        self._versions: LruCache[tuple[str, int, str | None], RegisteredSchema] = LruCache(capacity)
        self._guids: LruCache[tuple[int, str], str] = LruCache(capacity)  # by (id, context)
        self._ids_by_guid: LruCache[str, dict[str, int]] = LruCache(capacity)
        self._by_guid: LruCache[tuple[str, str | None], Schema] = LruCache(capacity)
        self._latest: LruCache[tuple[str, str | None], RegisteredSchema] = LruCache(capacity, latest_ttl)
        self._latest_meta: LruCache[tuple[str, frozenset, bool, str | None], RegisteredSchema] = LruCache(
            capacity, latest_ttl
        )

    # -- one request, with failover and retries ----------------------------------------------------------

    def exchange(self, method: str, path: str, body: Any = None, params: Mapping[str, Any] | None = None) -> Call[Any]:
        """One API call; returns the decoded JSON body (None when empty)."""
        content = orjson.dumps(body) if body is not None else None
        headers = _BODY_HEADERS if content is not None else None
        query = _query(params)
        failures: list[str] = []
        last_status = last_code = -1
        n = len(self.urls)
        for attempt in range(self.max_retries + 1):
            start = self.preferred
            for k in range(n):
                i = (start + k) % n
                base = self.urls[i]
                reply = yield HttpRequest(method, base + path, content, headers, query)
                if isinstance(reply, BaseException):
                    failures.append(f"{base}: {type(reply).__name__}: {reply}")
                    continue
                status, data = reply
                if status < 300:
                    self.preferred = i
                    return orjson.loads(data) if data else None
                code, message = _error_body(status, data)
                if status not in RETRIABLE:
                    self.preferred = i
                    raise RegistryError(status, code, message)
                failures.append(f"{base}: HTTP {status}: {message}")
                last_status, last_code = status, code
            if attempt < self.max_retries:
                yield Sleep(backoff_delay(attempt, self.retry_backoff, self.retry_max_backoff))
        tried = "; ".join(failures[-2 * n :])
        raise RegistryUnavailableError(
            last_status,
            last_code,
            f"{method} {path} failed on every registry URL after {self.max_retries + 1} rounds ({tried})",
        )

    # -- schemas ---------------------------------------------------------------------------------------

    def register(self, subject: str, schema: Schema, normalize: bool = False) -> Call[int]:
        """Register ``schema`` under ``subject`` (or find it there); returns its global id. Cached."""
        key = (subject, schema, normalize)
        hit = self._registered_ids.get(key)
        if hit is not None:
            return hit
        body = yield from self.exchange(
            "POST", f"/subjects/{_seg(subject)}/versions", schema.to_json(), {"normalize": normalize}
        )
        schema_id = int(body["id"])
        self._by_id.setdefault((schema_id, None), schema)
        if body.get("version") is not None:
            self._registrations.put(
                key, RegisteredSchema(schema_id, schema, subject, int(body["version"]), body.get("guid"))
            )
        return self._registered_ids.put(key, schema_id)

    def register_full(self, subject: str, schema: Schema, normalize: bool = False) -> Call[RegisteredSchema]:
        """Register and return id and version. The version comes from a lookup when the server omits it (as
        Confluent 7.x does)."""
        key = (subject, schema, normalize)
        hit = self._registrations.get(key)
        if hit is not None:
            return hit
        schema_id = yield from self.register(subject, schema, normalize)
        hit = self._registrations.get(key)
        if hit is not None:
            return hit
        found = yield from self.lookup(subject, schema, normalize)
        return self._registrations.put(key, RegisteredSchema(schema_id, schema, subject, found.version, found.guid))

    def lookup(
        self, subject: str, schema: Schema, normalize: bool = False, deleted: bool = False
    ) -> Call[RegisteredSchema]:
        """Find ``schema`` among ``subject``'s versions without registering (40401/40403 when absent)."""
        key = (subject, schema, normalize, deleted)
        hit = self._lookups.get(key)
        if hit is not None:
            return hit
        body = yield from self.exchange(
            "POST", f"/subjects/{_seg(subject)}", schema.to_json(), {"normalize": normalize, "deleted": deleted or None}
        )
        registered = RegisteredSchema(
            int(body["id"]), schema, body.get("subject", subject), int(body["version"]), body.get("guid")
        )
        return self._lookups.put(key, registered)

    def get_schema(self, schema_id: int, subject: str | None = None, fmt: str | None = None) -> Call[Schema]:
        """The schema with global id ``schema_id`` (``fmt="serialized"`` gives Protobuf as base64). Cached."""
        key = (schema_id, fmt)
        hit = self._by_id.get(key)
        if hit is not None:
            return hit
        body = yield from self.exchange(
            "GET", f"/schemas/ids/{int(schema_id)}", params={"subject": subject, "format": fmt}
        )
        return self._by_id.put(key, Schema.from_json(body))

    def get_version(
        self, subject: str, version: int | str, fmt: str | None = None, deleted: bool = False
    ) -> Call[RegisteredSchema]:
        """One version of a subject (``"latest"`` is not cached here; use ``get_latest_version``)."""
        key = (subject, int(version), fmt) if version != "latest" and not deleted else None
        if key is not None:
            hit = self._versions.get(key)
            if hit is not None:
                return hit
        body = yield from self.exchange(
            "GET",
            f"/subjects/{_seg(subject)}/versions/{_seg(version)}",
            params={"format": fmt, "deleted": deleted or None},
        )
        registered = _registered(body, subject)
        return registered if key is None else self._versions.put(key, registered)

    def get_latest_version(self, subject: str, fmt: str | None = None) -> Call[RegisteredSchema]:
        """The newest version of ``subject``; reused for ``latest_ttl`` seconds."""
        key = (subject, fmt)
        hit = self._latest.get(key)
        if hit is not None:
            return hit
        body = yield from self.exchange("GET", f"/subjects/{_seg(subject)}/versions/latest", params={"format": fmt})
        return self._latest.put(key, _registered(body, subject))

    def get_latest_with_metadata(
        self, subject: str, metadata: Mapping[str, str], deleted: bool = False, fmt: str | None = None
    ) -> Call[RegisteredSchema]:
        """The newest version of ``subject`` whose metadata properties include all of ``metadata``
        (``GET /subjects/{s}/metadata``); reused for ``latest_ttl`` seconds."""
        key = (subject, frozenset(metadata.items()), deleted, fmt)
        hit = self._latest_meta.get(key)
        if hit is not None:
            return hit
        params = {"key": list(metadata), "value": list(metadata.values()), "deleted": deleted or None, "format": fmt}
        body = yield from self.exchange("GET", f"/subjects/{_seg(subject)}/metadata", params=params)
        return self._latest_meta.put(key, _registered(body, subject))

    def get_associations_by_resource_name(
        self,
        resource_name: str,
        resource_namespace: str,
        resource_type: str | None = None,
        association_types: list[str] | None = None,
        offset: int = 0,
        limit: int = -1,
    ) -> Call[list[dict[str, Any]]]:
        """The associations of a resource (Confluent 8's ``GET /associations/resources/{namespace}/{name}``;
        namespace ``-`` matches any), as the registry answers them. Never cached: they change without a new
        schema, and ``AssociatedNameStrategy`` keeps what it resolved."""
        params = {
            "resourceType": resource_type,
            "associationType": association_types,
            "offset": offset if offset > 0 else None,
            "limit": limit if limit >= 1 else None,
        }
        path = f"/associations/resources/{_seg(resource_namespace)}/{_seg(resource_name)}"
        return list((yield from self.exchange("GET", path, params=params)) or ())

    def get_versions(self, subject: str, deleted: bool = False) -> Call[list[int]]:
        return (
            yield from self.exchange("GET", f"/subjects/{_seg(subject)}/versions", params={"deleted": deleted or None})
        )

    def get_subjects(self, prefix: str | None = None, deleted: bool = False) -> Call[list[str]]:
        return (
            yield from self.exchange("GET", "/subjects", params={"subjectPrefix": prefix, "deleted": deleted or None})
        )

    def get_subjects_by_id(self, schema_id: int) -> Call[list[str]]:
        return (yield from self.exchange("GET", f"/schemas/ids/{int(schema_id)}/subjects"))

    def get_guid(self, schema_id: int, subject: str | None = None) -> Call[str]:
        """The GUID of schema ``schema_id`` (Confluent 8.x and schemakit give it with the schema), in the context
        ``subject`` names (``:.ctx:name`` or ``:.ctx:``; default: the default context). Cached."""
        context = _context_of(subject)
        hit = self._guids.get((int(schema_id), context))
        if hit is not None:
            return hit
        body = yield from self.exchange(
            "GET", f"/schemas/ids/{int(schema_id)}", params={"subject": subject if context != "." else None}
        )
        guid = body.get("guid") if isinstance(body, dict) else None
        if not guid:
            raise RegistryError(
                404, 40403, f"the registry gives no GUID for schema {schema_id} (Confluent 8.x or schemakit needed)"
            )
        if context == ".":
            self._by_id.setdefault((int(schema_id), None), Schema.from_json(body))
        return self._guids.put((int(schema_id), context), str(guid))

    def get_ids_by_guid(self, guid: str) -> Call[dict[str, int]]:
        """The id of the schema with this GUID in each context that has it (``GET /schemas/guids/{guid}/ids``):
        context (``"."`` for the default one) -> id. Cached."""
        hit = self._ids_by_guid.get(guid)
        if hit is not None:
            return hit
        body = yield from self.exchange("GET", f"/schemas/guids/{_seg(guid)}/ids")
        ids = {str(item.get("context") or "."): int(item["id"]) for item in body or ()}
        if not ids:
            raise RegistryError(404, 40403, f"Schema {guid} not found")
        return self._ids_by_guid.put(guid, ids)

    def get_id_by_guid(self, guid: str, context: str = ".") -> Call[int]:
        """The id of the schema with this GUID in ``context`` (default: the default context); 40403 naming the
        contexts that have it when ``context`` does not (asked again each time: it may be registered there
        since)."""
        ids = yield from self.get_ids_by_guid(guid)
        if context not in ids:
            self._ids_by_guid.discard_where(lambda key: key == guid)
            ids = yield from self.get_ids_by_guid(guid)
        if context not in ids:
            where = ", ".join(f"id {i} in context {c!r}" for c, i in ids.items())
            raise RegistryError(404, 40403, f"Schema {guid} is not in context {context!r} (it has {where})")
        return ids[context]

    def get_schema_by_guid(self, guid: str, fmt: str | None = None) -> Call[Schema]:
        """The schema with this GUID, in whichever context has it (``GET /schemas/guids/{guid}``, as
        confluent-kafka's ``get_schema_by_guid``). Cached."""
        key = (guid, fmt)
        hit = self._by_guid.get(key)
        if hit is not None:
            return hit
        body = yield from self.exchange("GET", f"/schemas/guids/{_seg(guid)}", params={"format": fmt})
        return self._by_guid.put(key, Schema.from_json(body))

    def get_schema_types(self) -> Call[list[str]]:
        return (yield from self.exchange("GET", "/schemas/types"))

    def delete_subject(self, subject: str, permanent: bool = False) -> Call[list[int]]:
        """Soft-delete ``subject``; with ``permanent`` soft-delete then hard-delete. Drops cached entries."""
        versions = yield from self.exchange("DELETE", f"/subjects/{_seg(subject)}")
        if permanent:
            versions = yield from self.exchange("DELETE", f"/subjects/{_seg(subject)}", params={"permanent": True})
        self.forget(subject)
        return versions

    def delete_version(self, subject: str, version: int | str, permanent: bool = False) -> Call[int]:
        result = yield from self.exchange(
            "DELETE", f"/subjects/{_seg(subject)}/versions/{_seg(version)}", params={"permanent": permanent or None}
        )
        self.forget(subject)
        return int(result)

    def forget(self, subject: str) -> None:
        """Drop every cached answer about ``subject`` (after a delete)."""
        for cache in (
            self._registered_ids,
            self._registrations,
            self._lookups,
            self._versions,
            self._latest,
            self._latest_meta,
        ):
            cache.discard_where(lambda key: key[0] == subject)

    # -- config and compatibility -------------------------------------------------------------------

    def get_compatibility(self, subject: str | None = None) -> Call[str]:
        body = yield from self.exchange("GET", f"/config/{_seg(subject)}" if subject else "/config")
        return body.get("compatibilityLevel") or body["compatibility"]

    def set_compatibility(self, level: str, subject: str | None = None) -> Call[str]:
        body = yield from self.exchange(
            "PUT", f"/config/{_seg(subject)}" if subject else "/config", {"compatibility": level.upper()}
        )
        return body["compatibility"]

    def test_compatibility(self, subject: str, schema: Schema, version: int | str = "latest") -> Call[bool]:
        body = yield from self.exchange(
            "POST", f"/compatibility/subjects/{_seg(subject)}/versions/{_seg(version)}", schema.to_json()
        )
        return bool(body["is_compatible"])
