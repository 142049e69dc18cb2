"""Wiring: log backend → store → service → HTTP app (``registry/http``) → uvicorn, with topic checks and startup
logging.

Lifecycle. uvicorn starts listening at once; the startup replay of ``_schemas`` runs in the background
meanwhile, so ``/health/ready`` can say "not yet" (and the API answers 503) instead of the port staying closed.
A replay that fails stops the server (exit status 3). SIGTERM (or Ctrl-C): the instance reports not ready,
stops accepting connections, lets the requests in flight finish (writes included: they are acknowledged once
applied), for at most ``--shutdown-timeout-ms``, and only then leaves the election and closes the log.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any

import uvicorn

from registry import __version__, health
from registry.app import RegistryApp
from registry.config import RegistryConfig
from registry.dek.kms import Kms
from registry.dek.service import DekService
from registry.dek.state import DekState
from registry.exporters import ExporterManager
from registry.forwarder import Forwarder, LeaderOffsetHeader
from registry.health import Health
from registry.http.api import ApiParts
from registry.http.protocol import guarded_protocol
from registry.instance_lock import InstanceLock, LockHeldError
from registry.leader import ELECTION_GROUP_SETTINGS, ELECTION_SESSION_TIMEOUT, AppenderSlot, Election
from registry.metrics import Metrics, RegistrySources
from registry.schema_types import known_schema_types, protoc
from registry.security import Security, build_security, tls
from registry.security.passwords import MissingExtraError
from registry.security.users_file import UsersFileError
from registry.service import Service
from registry.store import LogStore, Store
from streams.log import Log, LogError, open_log, redact_url

log = logging.getLogger("registry")


class StartupError(Exception):
    """A reason not to start, worded for the operator (one line: what, where, how to fix)."""


def open_backend(config: RegistryConfig) -> Log:
    """The log named by the config, or a StartupError saying what is wrong with its URL."""
    try:
        return open_log(config.log_url)
    except ValueError as e:
        raise StartupError(str(e)) from e


def check_topics(config: RegistryConfig) -> None:
    """Create the store topic (and, where instances elect a leader, the election topic) or refuse one that
    is wrong, before serving."""
    log_backend = open_backend(config)
    try:
        elects = log_backend.capabilities.group_membership
        wanted = [config.topic, config.dek_topic] + ([config.leader_topic] if elects else [])
        for name in wanted:
            _check_topic(log_backend, name)
    except LogError as e:
        raise StartupError(f"cannot use the log at {redact_url(config.log_url)}: {e}") from e
    finally:
        log_backend.close()


def _check_topic(log_backend: Log, name: str) -> None:
    info = log_backend.describe_topic(name)
    if info is None:
        info = log_backend.ensure_topic(name, 1, compacted=True)
        log.info("created topic %r (1 partition, cleanup.policy=compact)", name)
        return
    if info.partitions != 1:
        raise StartupError(
            f"topic {name!r} has {info.partitions} partitions but the registry needs exactly 1 (it keeps a single "
            f"ordered log): delete and recreate {name!r} with 1 partition and cleanup.policy=compact, "
            f"or use another topic"
        )
    if not info.compacted:
        policy = info.config.get("cleanup.policy", "delete (the default)")
        raise StartupError(
            f"topic {name!r} has cleanup.policy={policy} but the registry needs cleanup.policy=compact: "
            f"set it with `kafka-configs --alter --entity-type topics --entity-name {name} "
            f"--add-config cleanup.policy=compact`, or use another topic"
        )


def open_security(config: RegistryConfig, several_instances: bool) -> Security | None:
    """The instance's authentication and authorization, or a StartupError naming what is wrong."""
    problems = config.security.problems(several_instances=several_instances)
    if problems:
        raise StartupError("; ".join(problems))
    try:
        if config.security.client_auth != "none":
            tls.require_x509()
        return build_security(config.security)
    except (UsersFileError, MissingExtraError, ValueError, OSError) as e:
        raise StartupError(str(e)) from e


def _lock_store(log_backend: Log, config: RegistryConfig) -> InstanceLock | None:
    """Where this registry is its log's only writer and the log is a local file, make sure no other
    registry serves the same store topic from it (``instance_lock``)."""
    if log_backend.local_path is None:
        return None
    try:
        return InstanceLock.acquire(log_backend.local_path, config.topic, config.url)
    except LockHeldError as e:
        log_backend.close()
        raise StartupError(str(e)) from e
    except OSError as e:
        log_backend.close()
        raise StartupError(f"cannot lock the log at {log_backend.local_path} for this registry: {e}") from e


def build_app(config: RegistryConfig) -> RegistryApp:
    log_backend = open_backend(config)
    # Several instances can share a log with group membership: then only the elected leader writes (through
    # the appender the election puts in the slot), and the others forward writes to it.
    appenders = AppenderSlot() if log_backend.capabilities.group_membership else None
    protection = open_security(config, several_instances=appenders is not None)
    sec = config.security
    lock = _lock_store(log_backend, config) if appenders is None else None
    protoc.configure(timeout=config.protoc_timeout)
    store = Store(log_backend, config.topic, timeout=config.store_timeout, appenders=appenders)
    # the DEK registry's topic: written, forwarded and replayed as _schemas is
    dek_store = LogStore(log_backend, config.dek_topic, DekState(), timeout=config.store_timeout, appenders=appenders)
    dek_service = DekService(dek_store, Kms(config.dek_local_secret))
    status = Health()
    status.set_not_ready(health.REPLAY, f"replaying {config.topic}")
    status.add_check(
        health.READER, lambda: store.reader_failure or dek_store.reader_failure
    )  # a reader that cannot read
    metrics = Metrics()
    service = Service(store, default_compatibility=config.compatibility, limits=config.limits, checks=metrics)
    election: Election | None = None
    forwarder: Forwarder | None = None
    if appenders is not None:
        election_log = open_log(config.log_url, groups=ELECTION_GROUP_SETTINGS)
        election = Election(
            election_log,
            store,
            appenders,
            topic=config.leader_topic,
            group=config.group_id,
            url=config.url,
            eligible=config.leader_eligible,
            timeout=config.store_timeout,
            takeover_after=config.takeover_after,
            session_timeout=election_log.group_session_timeout or ELECTION_SESSION_TIMEOUT,
            more_stores=[dek_store],
        )
        logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per forwarded request
        forwarder = Forwarder(
            election,
            store,
            config.url,
            timeout=max(60.0, 3 * config.store_timeout),
            leader_wait=config.store_timeout,
            # an https leader is verified with --inter-node-ca; this node's certificate answers its client check
            tls=tls.client_context(sec.inter_node_ca, sec.tls_cert, sec.tls_key) if sec.tls else True,
            more_stores=[dek_store],
        )
        status.add_check(health.LEADER, lambda: None if election.leader is not None else "no leader known yet")
    exporters = ExporterManager(
        store, is_leader=(lambda: election.is_leader) if election is not None else None, source_id=config.group_id
    )
    app = RegistryApp(
        ApiParts(
            service,
            forwarder=forwarder,
            security=protection,
            health=status,
            metrics=metrics,
            election=election,
            exporters=exporters,
            dek_service=dek_service,
        )
    )
    metrics.sources = RegistrySources(
        state=store.state,
        health=status,
        is_leader=(lambda: election.is_leader) if election is not None else None,
        leader_known=(lambda: election.leader is not None) if election is not None else None,
        replayed_records=lambda: store.records_replayed,
        cache_entries=lambda: len(app),
        cache_bytes=lambda: app.bytes,
        exporters=exporters.figures,
        dek_keys=dek_store.state.key_counts,
    )
    starting: list[asyncio.Task[None]] = []

    async def startup() -> None:
        log.info("schemakit registry %s: log backend %s, topic %s", __version__, log_backend.describe(), config.topic)
        log.info("schema types: %s (each loaded when first used)", ", ".join(known_schema_types()))
        limits = config.limits
        log.info(
            "limits: request body %d bytes, schema %d bytes, nesting %d, %d references; %d schema workers, "
            "queue %d; header/body timeouts %g/%g s",
            limits.max_request_bytes,
            limits.max_schema_bytes,
            limits.max_schema_depth,
            limits.max_references,
            limits.schema_workers,
            limits.schema_queue,
            limits.header_timeout,
            limits.body_timeout,
        )
        starting.append(asyncio.create_task(start_serving(), name="registry-startup"))

    async def start_serving() -> None:
        try:
            started = time.monotonic()
            await asyncio.to_thread(store.open)
            await asyncio.to_thread(dek_store.open)
            status.replay_seconds = time.monotonic() - started
            store.start(asyncio.get_running_loop())
            dek_store.start(asyncio.get_running_loop())
            await asyncio.to_thread(start_election)
            exporters.start()  # they run while this instance leads
            if protection is not None:
                await protection.start()  # the users file, the token issuer's keys
                for line in protection.describe():
                    log.info("%s", line)
            if sec.tls:
                log.info("TLS: certificate %s, client certificates %s", sec.tls_cert, sec.client_auth)
        except Exception as e:  # any failure here leaves nothing to serve
            log.critical("cannot start: %s", e, exc_info=not isinstance(e, LogError))
            status.set_unhealthy(health.REPLAY, f"startup failed: {e}")
            app.failed = str(e)
            app.stop()
            return
        status.serving = True
        status.clear(health.REPLAY)
        log.info(
            "serving the Confluent Schema Registry API at %s (API docs at %s/docs, schema browser at %s/ui/)",
            config.url,
            config.url,
            config.url,
            extra={"url": config.url},
        )

    def start_election() -> None:
        if election is None:
            log.info("leader: this node (single-node embedded log)")
        else:
            election.ensure_topic()
            election.start()
            log.info(
                "leader election: group %r on topic %r (session timeout %gs), this node %s; leader announced on "
                "that topic once elected",
                config.group_id,
                config.leader_topic,
                election.log.group_session_timeout,
                "is eligible" if config.leader_eligible else "is not eligible (--leader-eligible false)",
            )

    async def shutdown() -> None:
        if protection is not None:
            await protection.stop()
        if starting and not starting[0].done():
            # The replay is still running in a worker thread that cannot be interrupted; the process exits
            # without closing the log under it.
            log.warning("stopped during the startup replay")
            return
        await exporters.close()
        if election is not None:
            await asyncio.to_thread(election.close)
            election.log.close()
        if forwarder is not None:
            await forwarder.aclose()
        service.parser.pool.shutdown()
        store.close()
        dek_store.close()
        log_backend.close()
        if lock is not None:
            lock.release()
        log.info("stopped")

    app.on_startup.append(startup)
    app.on_shutdown.append(shutdown)
    return app


class RegistryServer(uvicorn.Server):
    """uvicorn's server, reporting the shutdown: not ready from the first moment, and what is being drained."""

    def __init__(self, config: uvicorn.Config, status: Health) -> None:
        super().__init__(config)
        self.status = status

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.status.set_not_ready(health.SHUTDOWN, "shutting down")
        timeout = self.config.timeout_graceful_shutdown
        in_flight = len(self.server_state.tasks)
        log.info(
            "stopping: no new connections; %d request(s) in flight finish first (at most %s), then the log closes",
            in_flight,
            f"{timeout:g}s" if timeout is not None else "no limit",
            extra={"in_flight": in_flight},
        )
        await super().shutdown(sockets)


def serve(config: RegistryConfig) -> int:
    """Run until stopped; the exit status (non-zero when startup failed)."""
    check_topics(config)
    app = build_app(config)
    asgi = LeaderOffsetHeader(app, app.service.store, *app.forwarder.stores[1:]) if app.forwarder is not None else app
    server = RegistryServer(
        uvicorn.Config(
            asgi,
            host=config.host,
            port=config.port,
            lifespan="on",
            access_log=False,
            log_level="warning",
            log_config=None,  # uvicorn's loggers go through the registry's logging (``--log-format``)
            loop="auto",
            timeout_keep_alive=30,
            **tls_options(config),
            timeout_graceful_shutdown=config.shutdown_timeout,  # type: ignore[arg-type]  # a float works
        ),
        app.health,
    )

    def stop() -> None:
        server.should_exit = True

    app.stop = stop
    server.run()
    return 0 if server.started and app.failed is None else 3


def tls_options(config: RegistryConfig) -> dict[str, Any]:
    """uvicorn's protocol and HTTPS settings: uvicorn's protocol with a header deadline and size
    (``http/protocol.py``); with client certificates, also putting them into the ASGI scope."""
    sec = config.security
    guarded = guarded_protocol(config.limits.header_timeout)
    if not sec.tls:
        return {"http": guarded}
    return {
        "ssl_certfile": sec.tls_cert,
        "ssl_keyfile": sec.tls_key,
        "ssl_ca_certs": sec.tls_client_ca,
        "ssl_cert_reqs": tls.cert_reqs(sec.client_auth),
        "http": tls.protocol_class(guarded) if sec.client_auth != "none" else guarded,
    }
