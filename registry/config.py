"""How one registry instance runs: a ``RegistryConfig``, whose defaults are the only copy of each default
(the limits' defaults, ``protoc_timeout``'s too, are written in ``limits.py``).

The command line (``cli.py``) shows and applies these defaults, ``server.py`` wires the instance from a
config, and ``Service`` (its ``Settings``) falls back to the default compatibility level.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compat import CompatibilityLevel
from registry.limits import DEFAULT_PROTOC_TIMEOUT, Limits
from registry.security.config import SecurityConfig


@dataclass(frozen=True, slots=True)
class RegistryConfig:
    #: where the ``_schemas`` log lives: ``sqlite:///DIR`` (embedded) or ``kafka://host:port[,host:port]``
    log_url: str = "sqlite:///./data"
    host: str = "127.0.0.1"
    port: int = 8081  # Confluent's
    topic: str = "_schemas"  # Confluent's kafkastore.topic
    #: the URL other instances forward writes to; default ``http://host:port`` (``https`` with TLS)
    advertised_url: str | None = None
    leader_eligible: bool = True
    compatibility: CompatibilityLevel = CompatibilityLevel.BACKWARD  # Confluent's default level
    #: seconds a write waits for the log (and for this node to apply it)
    store_timeout: float = 10.0
    group_id: str = "schema-registry"  # Confluent's schema.registry.group.id
    election_topic: str | None = None  # default: "<topic>_leader"
    #: what one request may make the registry do (body and schema sizes, timeouts, schema work, caches)
    limits: Limits = field(default_factory=Limits)
    #: Kafka only: seconds the leader's address must refuse connections before a follower replaces it
    #: without waiting for the group's session timeout; 0 leaves failover to the group
    takeover_after: float = 1.0
    #: seconds one protoc run (compiling a Protobuf schema) may take before it is killed and the schema refused
    protoc_timeout: float = DEFAULT_PROTOC_TIMEOUT
    #: seconds a stopping instance gives the requests in flight to finish (then they are cancelled)
    shutdown_timeout: float = 30.0
    #: log line format: ``text`` or ``json`` (one object per line)
    log_format: str = "text"
    #: authentication, authorization and TLS (``registry/security``); the default is none of them
    security: SecurityConfig = field(default_factory=SecurityConfig)
    #: the DEK registry's topic (Confluent's ``_dek_registry_keys``)
    dek_topic: str = "_dek_registry_keys"
    #: the secret of shared ``local-kms`` KEKs (confluent-kafka's ``LocalKmsDriver`` secret); None: the KEK's
    #: ``kmsProps.secret``
    dek_local_secret: str | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        scheme = "https" if self.security.tls else "http"
        return self.advertised_url or f"{scheme}://{self.host}:{self.port}"

    @property
    def leader_topic(self) -> str:
        """The election topic: ``election_topic``, else the store topic's (``_schemas`` -> ``_schemas_leader``)."""
        return self.election_topic or f"{self.topic}_leader"


DEFAULTS = RegistryConfig()
