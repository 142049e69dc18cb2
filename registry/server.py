"""Wiring: log backend → store → service → HTTP app (``registry/http``) → uvicorn, with topic checks and startup
logging."""

from __future__ import annotations

import asyncio
import logging

import uvicorn

from registry import __version__
from registry.config import RegistryConfig
from registry.forwarder import Forwarder, LeaderOffsetHeader
from registry.http.app import RegistryApp
from registry.http.protocol import guarded_protocol
from registry.instance_lock import InstanceLock, LockHeldError
from registry.leader import ELECTION_GROUP_SETTINGS, ELECTION_SESSION_TIMEOUT, Election, WriterSlot
from registry.schema_types import protoc, schema_types
from registry.service import Service
from registry.store import Store
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
        wanted = [config.topic] + ([config.leader_topic] if elects else [])
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
    # the writer the election puts in the slot), and the others forward writes to it.
    writers = WriterSlot() if log_backend.capabilities.group_membership else None
    lock = _lock_store(log_backend, config) if writers is None else None
    protoc.configure(timeout=config.protoc_timeout)
    store = Store(log_backend, config.topic, timeout=config.store_timeout, writers=writers)
    service = Service(store, default_compatibility=config.compatibility, limits=config.limits)
    election: Election | None = None
    forwarder: Forwarder | None = None
    if writers is not None:
        election_log = open_log(config.log_url, groups=ELECTION_GROUP_SETTINGS)
        election = Election(
            election_log,
            store,
            writers,
            topic=config.leader_topic,
            group=config.group_id,
            url=config.url,
            eligible=config.leader_eligible,
            timeout=config.store_timeout,
            takeover_after=config.takeover_after,
            session_timeout=election_log.group_session_timeout or ELECTION_SESSION_TIMEOUT,
        )
        logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per forwarded request
        forwarder = Forwarder(
            election,
            store,
            config.url,
            timeout=max(60.0, 3 * config.store_timeout),
            leader_wait=config.store_timeout,
        )
    app = RegistryApp(service, forwarder=forwarder)

    async def startup() -> None:
        log.info("schemakit registry %s: log backend %s, topic %s", __version__, log_backend.describe(), config.topic)
        log.info("schema types: %s", ", ".join(schema_types()))
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
        await asyncio.to_thread(protoc.include_roots)  # its imports now, not in the first Protobuf request
        await asyncio.to_thread(store.open)
        store.start(asyncio.get_running_loop())
        if election is None:
            log.info("leader: this node (single-node embedded log)")
        else:
            await asyncio.to_thread(election.ensure_topic)
            election.start()
            log.info(
                "leader election: group %r on topic %r (session timeout %gs), this node %s; leader announced on "
                "that topic once elected",
                config.group_id,
                config.leader_topic,
                election.log.group_session_timeout,
                "is eligible" if config.leader_eligible else "is not eligible (--leader-eligible false)",
            )
        log.info("serving the Confluent Schema Registry API at %s (API docs at %s/docs)", config.url, config.url)

    async def shutdown() -> None:
        if election is not None:
            await asyncio.to_thread(election.close)
            election.log.close()
        if forwarder is not None:
            await forwarder.aclose()
        service.pool.shutdown()
        store.close()
        log_backend.close()
        if lock is not None:
            lock.release()
        log.info("stopped")

    app.on_startup.append(startup)
    app.on_shutdown.append(shutdown)
    return app


def serve(config: RegistryConfig) -> int:
    """Run until stopped; the exit status (non-zero when startup failed)."""
    check_topics(config)
    app = build_app(config)
    asgi = LeaderOffsetHeader(app, app.service.store) if app.forwarder is not None else app
    server = uvicorn.Server(
        uvicorn.Config(
            asgi,
            host=config.host,
            port=config.port,
            lifespan="on",
            access_log=False,
            log_level="warning",
            loop="auto",
            http=guarded_protocol(config.limits.header_timeout),  # uvicorn's, with a header read timeout
            timeout_keep_alive=30,
        )
    )
    server.run()
    return 0 if server.started else 3
