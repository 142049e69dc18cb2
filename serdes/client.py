"""``RegistryClient``: the synchronous client for the Confluent Schema Registry REST API (v1).

Its calls are ``serdes.registry_api.RegistryApi``'s (caches, failover, retries, request building and parsing,
shared with ``AsyncRegistryClient``), run over one ``httpx.Client`` (a keep-alive pool serving every URL). Safe to
share between threads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx

from serdes.auth import close_auth
from serdes.client_config import ClientSettings
from serdes.registry_api import Call, RegistryApi
from serdes.transport import run_sync

__all__ = ["RegistryClient"]

P = ParamSpec("P")
R = TypeVar("R")


def _blocking(call: Callable[Concatenate[RegistryApi, P], Call[R]]) -> Callable[Concatenate[RegistryClient, P], R]:
    """The ``RegistryClient`` method running ``call`` over the client's ``httpx.Client``."""

    @functools.wraps(call)
    def method(self: RegistryClient, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return run_sync(self._http, call(self._api, *args, **kwargs))

    return method


class RegistryClient(ClientSettings):
    """Client for one registry cluster (several URLs = the same cluster, used for failover).

    ``RegistryClient(url, **options)`` takes our keyword arguments (see ``ClientSettings``);
    ``RegistryClient.from_config(conf)`` takes confluent-kafka's ``SchemaRegistryClient`` configuration dict.
    """

    _http: httpx.Client

    def _open(self, http_options: dict[str, Any]) -> None:
        self._http = httpx.Client(**http_options)

    def close(self) -> None:
        self._http.close()
        close_auth(self._auth)

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    request = _blocking(RegistryApi.exchange)
    register = _blocking(RegistryApi.register)
    register_full = _blocking(RegistryApi.register_full)
    lookup = _blocking(RegistryApi.lookup)
    get_schema = _blocking(RegistryApi.get_schema)
    get_version = _blocking(RegistryApi.get_version)
    get_latest_version = _blocking(RegistryApi.get_latest_version)
    get_latest_with_metadata = _blocking(RegistryApi.get_latest_with_metadata)
    get_associations_by_resource_name = _blocking(RegistryApi.get_associations_by_resource_name)
    get_versions = _blocking(RegistryApi.get_versions)
    get_subjects = _blocking(RegistryApi.get_subjects)
    get_subjects_by_id = _blocking(RegistryApi.get_subjects_by_id)
    get_guid = _blocking(RegistryApi.get_guid)
    get_id_by_guid = _blocking(RegistryApi.get_id_by_guid)
    get_ids_by_guid = _blocking(RegistryApi.get_ids_by_guid)
    get_schema_by_guid = _blocking(RegistryApi.get_schema_by_guid)
    get_schema_types = _blocking(RegistryApi.get_schema_types)
    delete_subject = _blocking(RegistryApi.delete_subject)
    delete_version = _blocking(RegistryApi.delete_version)
    get_compatibility = _blocking(RegistryApi.get_compatibility)
    set_compatibility = _blocking(RegistryApi.set_compatibility)
    test_compatibility = _blocking(RegistryApi.test_compatibility)
