"""``AsyncRegistryClient``: the asyncio client for the Confluent Schema Registry REST API (v1).

The same calls, caches, failover and retries as ``RegistryClient`` (``serdes.registry_api.RegistryApi``), run over
one ``httpx.AsyncClient``; every API method is a coroutine. Use it from one event loop.

    async with AsyncRegistryClient("http://localhost:8081") as client:
        schema = await client.get_schema(1)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx

from serdes.auth import aclose_auth
from serdes.client_config import ClientSettings
from serdes.registry_api import Call, RegistryApi
from serdes.transport import run_async

__all__ = ["AsyncRegistryClient"]

P = ParamSpec("P")
R = TypeVar("R")


def _awaiting(
    call: Callable[Concatenate[RegistryApi, P], Call[R]],
) -> Callable[Concatenate[AsyncRegistryClient, P], Coroutine[Any, Any, R]]:
    """The ``AsyncRegistryClient`` coroutine method running ``call`` over the client's ``httpx.AsyncClient``."""

    @functools.wraps(call)
    async def method(self: AsyncRegistryClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await run_async(self._http, call(self._api, *args, **kwargs))

    return method


class AsyncRegistryClient(ClientSettings):
    """Async client for one registry cluster: the arguments of ``RegistryClient`` (and ``from_config``), and
    the same methods as coroutines. Close it with ``await client.aclose()`` or ``async with``."""

    _http: httpx.AsyncClient

    _is_async = True

    def _open(self, http_options: dict[str, Any]) -> None:
        self._http = httpx.AsyncClient(**http_options)

    async def aclose(self) -> None:
        await self._http.aclose()
        self.close_blocking()
        await aclose_auth(self._auth)

    async def __aenter__(self) -> AsyncRegistryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    request = _awaiting(RegistryApi.exchange)
    register = _awaiting(RegistryApi.register)
    register_full = _awaiting(RegistryApi.register_full)
    lookup = _awaiting(RegistryApi.lookup)
    get_schema = _awaiting(RegistryApi.get_schema)
    get_version = _awaiting(RegistryApi.get_version)
    get_latest_version = _awaiting(RegistryApi.get_latest_version)
    get_latest_with_metadata = _awaiting(RegistryApi.get_latest_with_metadata)
    get_associations_by_resource_name = _awaiting(RegistryApi.get_associations_by_resource_name)
    get_versions = _awaiting(RegistryApi.get_versions)
    get_subjects = _awaiting(RegistryApi.get_subjects)
    get_subjects_by_id = _awaiting(RegistryApi.get_subjects_by_id)
    get_guid = _awaiting(RegistryApi.get_guid)
    get_id_by_guid = _awaiting(RegistryApi.get_id_by_guid)
    get_ids_by_guid = _awaiting(RegistryApi.get_ids_by_guid)
    get_schema_by_guid = _awaiting(RegistryApi.get_schema_by_guid)
    get_schema_types = _awaiting(RegistryApi.get_schema_types)
    delete_subject = _awaiting(RegistryApi.delete_subject)
    delete_version = _awaiting(RegistryApi.delete_version)
    get_compatibility = _awaiting(RegistryApi.get_compatibility)
    set_compatibility = _awaiting(RegistryApi.set_compatibility)
    test_compatibility = _awaiting(RegistryApi.test_compatibility)
