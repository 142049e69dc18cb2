"""How ``from_registry`` / ``to_registry`` reach the registry: a URL, or confluent-kafka's client configuration.

``registry`` is either a URL string (comma-separated for failover; ``http://user:pass@host`` for basic auth) or
the dict confluent-kafka's ``SchemaRegistryClient`` takes: ``url``, ``basic.auth.user.info``,
``bearer.auth.credentials.source`` STATIC_TOKEN / OAUTHBEARER with its ``bearer.auth.*`` keys,
``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``, ``ssl.key.password``, ``timeout``, ...
The same options reach both engines: the Python engine builds a ``serdes.RegistryClient`` from them (as
``from_config`` does) on the driver and in each Python worker; the JVM engine's executors read them in
``RegistryConnection.java`` (which implements the keys above; a CUSTOM bearer provider is a Python function,
so it needs the Python engine). File paths (CA bundle, client certificate and key) are read where the call runs,
so they must exist on the executors too.

Secrets: the options travel inside the serialized query plan to the executors (as any Spark closure does;
turn on ``spark.network.crypto.enabled`` / ``spark.io.encryption.enabled`` to protect them in transit). They are
never printed: ``repr`` shows the URLs without credentials, the JVM column prints as ``from_registry(<col>)``
and the Python one as the UDF's name, and error messages name URLs and paths only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from serdes.client import RegistryClient
from serdes.client_config import settings_from_config

__all__ = ["RegistryOptions"]

# Keys whose values are Python objects: they cannot be handed to the JVM engine.
_PYTHON_ONLY = ("bearer.auth.custom.provider.function", "bearer.auth.custom.provider.config")


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.username is None:
        return url.strip()
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class RegistryOptions:
    """The registry options of one ``from_registry`` / ``to_registry`` call (immutable, picklable, hashable).

    Equal options compare and hash equal (they key the per-worker client cache); ``repr`` hides credentials.
    """

    __slots__ = ("_items", "_key")

    def __init__(self, registry: str | Mapping[str, Any]) -> None:
        if isinstance(registry, str):
            conf: dict[str, Any] = {"url": registry}
        elif isinstance(registry, Mapping):
            conf = dict(registry)
            if not isinstance(conf.get("url"), str) or not conf["url"].strip():
                raise ValueError("registry options need 'url' (confluent-kafka's SchemaRegistryClient keys)")
        else:
            raise TypeError(
                f"registry must be a URL or a dict of registry client options, not {type(registry).__name__}"
            )
        self._items = tuple(sorted(conf.items()))
        self._key = json.dumps(self._items, default=repr)

    @property
    def config(self) -> dict[str, Any]:
        """confluent-kafka's client configuration (a fresh dict)."""
        return dict(self._items)

    @property
    def urls(self) -> str:
        """The registry URL(s), without credentials (for messages)."""
        return ",".join(_without_userinfo(u) for u in str(self.config["url"]).split(",") if u.strip())

    @property
    def python_only(self) -> str | None:
        """Why the JVM engine cannot use these options (a Python callback in them), or None."""
        if any(k in self.config for k in _PYTHON_ONLY) or self.config.get("bearer.auth.credentials.source") == "CUSTOM":
            return "a CUSTOM bearer provider is a Python function"
        return None

    def client(self, keep_alive: bool = True) -> RegistryClient:
        """A client built from these options. Executors pass ``keep_alive=False``: they ask once per schema id,
        and an idle keep-alive connection held by a long-lived Python worker would only delay the registry's
        shutdown (a TLS server waits for the peer's close)."""
        url, kwargs = settings_from_config(self.config)
        if not keep_alive:
            kwargs["headers"] = {**kwargs.get("headers", {}), "Connection": "close"}
        return RegistryClient(url, **kwargs)

    def jvm_config(self) -> dict[str, str]:
        """The options as strings, for the JVM engine's ``RegistryConnection``."""
        return {k: v if isinstance(v, str) else json.dumps(v) for k, v in self._items}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RegistryOptions) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"RegistryOptions({self.urls})"

    def __getstate__(self) -> tuple[tuple[str, Any], ...]:
        return self._items

    def __setstate__(self, items: tuple[tuple[str, Any], ...]) -> None:
        self._items = items
        self._key = json.dumps(items, default=repr)
