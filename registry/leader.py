"""Leader election for registry instances sharing a log with group membership (Kafka), and the leader's
fenced appender.

Every leader-eligible node's *member* consumer joins one group and subscribes to a one-partition election
topic: the member that owns partition 0 is the leader. Owning it is not enough to write, though: the new
leader first starts a transactional producer with a fixed transactional id (``init_transactions`` fences
any older producer with that id, i.e. a zombie leader, at the broker), catches up to the end of
``_schemas`` through that producer (a NOOP barrier), and only then takes writes and announces
``{"url", "generation"}`` on the election topic. Every node's *watcher* reads the election topic by
assignment (no group) and forwards writes to the announcement with the highest generation.

Everything the leader writes goes through that producer, one transaction per write, so a deposed
leader's next write fails with ``ProducerFencedError`` and the node steps down at once (as it does when it
reads a newer leader's announcement). The store gets that appender from an ``AppenderSlot`` the election fills
while this node leads and empties when it steps down.

Failover. The group notices a dead member only when its session times out (``session.timeout.ms``;
Kafka brokers refuse less than ``group.min.session.timeout.ms``, 6 s by default), and tansu then holds
the rejoin for half of that again. A follower often knows sooner: forwarding a write to the leader fails
(``leader_unreachable``, from the forwarder). It then probes the leader's address; when nothing has
listened there for ``takeover_after`` seconds (connections *refused*: the host is up, the process is
gone), it claims the takeover on the election topic; the first claim in the topic's order wins, and the
winner takes leadership through the same fenced path, without waiting for the group. A leader that is only slow,
paused or cut off still accepts or times out connections, so it is left to the session timeout. When the
group later gives partition 0 to another member, that member takes over as usual (fencing the interim
leader): leadership may change hands once more, never with two writers at a time. A firewall that rejects
(rather than drops) connections between instances looks like a dead leader: there set ``takeover_after``
to 0 (``--takeover-after-ms 0``) and leave failover to the group.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from registry.follower import PartitionFollower
from registry.offsets import OffsetWatcher
from registry.store import NOOP_KEY, LogStore, Store
from streams.log import (
    OFFSET_BEGINNING,
    DeliveryCallback,
    GroupSettings,
    Log,
    LogError,
    Producer,
    ProducerFencedError,
    Record,
    RecordMetadata,
    TopicPartition,
)

log = logging.getLogger("registry.leader")

ANNOUNCE_KEY = b"leader"
PROBE_KEY = b"probe"
CLAIM_KEY = b"claim"  # {"url", "replacing": generation}: a follower's bid to replace a dead leader
# The election group's timing: the shortest session a stock Kafka broker accepts (its
# group.min.session.timeout.ms; Confluent's registry uses 10 s), with four heartbeats per session, and
# cooperative-sticky assignment so that a member joining does not move leadership. librdkafka heartbeats
# from its own thread, so a busy Python interpreter (the GIL, a GC pause) does not miss them; a process
# stopped as a whole (SIGSTOP, a frozen VM, swapping) for longer than the session is replaced. A log URL
# that sets its own values (``session.timeout.ms``, ``heartbeat.interval.ms``) wins.
ELECTION_SESSION_TIMEOUT_MS = 6000
ELECTION_HEARTBEAT_INTERVAL_MS = 1500
ELECTION_GROUP_SETTINGS = GroupSettings(
    assignment="cooperative-sticky",
    session_timeout_ms=ELECTION_SESSION_TIMEOUT_MS,
    heartbeat_interval_ms=ELECTION_HEARTBEAT_INTERVAL_MS,
)
ELECTION_SESSION_TIMEOUT = ELECTION_SESSION_TIMEOUT_MS / 1000
HEADER_LEADER = "schemakit.leader"
HEADER_GENERATION = "schemakit.generation"


def transactional_id_for(group: str) -> str:
    return f"schemakit-registry-{group}"


def refuses_connections(url: str, timeout: float = 0.25) -> bool:
    """Whether the host of ``url`` answers but nothing listens on its port: proof that the process that
    served there is gone. A timeout or an unreachable network proves nothing (False)."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    if parts.hostname is None:
        return False
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
    return False


@dataclass(frozen=True, slots=True)
class Announcement:
    url: str
    generation: int


@dataclass(frozen=True, slots=True)
class _Suspicion:
    """A follower's doubt that ``leader`` is alive, since ``since`` (monotonic)."""

    leader: Announcement
    since: float


def encode_claim(url: str, replacing: int) -> bytes:
    return json.dumps({"url": url, "replacing": replacing}, separators=(",", ":")).encode()


def decode_claim(value: bytes | None) -> tuple[int, str] | None:
    """(generation to replace, claimant URL), or None for a malformed claim."""
    try:
        obj = json.loads(value or b"")
        return int(obj["replacing"]), str(obj["url"])
    except (ValueError, KeyError, TypeError):
        log.warning("ignoring malformed takeover claim %r", (value or b"")[:200])
        return None


def encode_announcement(a: Announcement) -> bytes:
    return json.dumps({"url": a.url, "generation": a.generation}, separators=(",", ":")).encode()


def decode_announcement(value: bytes | None) -> Announcement | None:
    if value is None:
        return None
    try:
        obj = json.loads(value)
        return Announcement(str(obj["url"]), int(obj["generation"]))
    except (ValueError, KeyError, TypeError):
        log.warning("ignoring malformed leader announcement %r", value[:200])
        return None


class LeaderAppender:
    """The leader's appends to the log: one transaction per record through the fenced producer.

    Used from worker threads (``Store.write`` runs it via ``asyncio.to_thread``); a lock keeps one
    transaction open at a time. Once fenced or retired it refuses every further write."""

    def __init__(self, producer: Producer, headers: list[tuple[str, bytes]], on_fenced: Callable[[str], None]):
        self._producer = producer
        self._headers = headers
        self._on_fenced = on_fenced
        self._lock = threading.Lock()
        self._retired = False

    def __call__(self, topic: str, value: bytes | None, key: bytes, timeout: float) -> RecordMetadata:
        return self.append([(topic, key, value)], timeout)[0]

    def append(self, records: list[tuple[str, bytes, bytes | None]], timeout: float) -> list[RecordMetadata]:
        """Append ``(topic, key, value)`` records to partition 0 of their topics in one transaction."""
        with self._lock:
            if self._retired:
                raise ProducerFencedError("this node is no longer the leader")
            p = self._producer
            landed: list[RecordMetadata | None] = [None] * len(records)
            try:
                p.begin_transaction()
                for i, (t, k, v) in enumerate(records):
                    p.send(t, v, k, partition=0, headers=self._headers, on_delivery=_landed_at(landed, i))
                p.commit_transaction(timeout)
                return _all_landed(landed)
            except ProducerFencedError as e:
                self._retired = True
                self._on_fenced(str(e))
                raise
            except LogError:
                try:
                    p.abort_transaction(timeout)
                except ProducerFencedError as e:
                    self._retired = True
                    self._on_fenced(str(e))
                except LogError as e:
                    log.warning("aborting a failed transaction failed too: %s", e)
                raise
            except Exception as e:
                # confluent-kafka's flush() raises its own exception types when the producer hits a fatal
                # error such as being fenced; whatever it was, this producer must not be used again.
                self._retired = True
                self._on_fenced(repr(e))
                raise ProducerFencedError(f"the leader's producer failed: {e!r}") from e

    def retire(self) -> None:
        """Stop writing: wait for a transaction in flight, then release the producer (in the background,
        because closing a fenced producer can take the log's whole timeout)."""

        def close() -> None:
            with self._lock:
                self._retired = True
            _close(self._producer)

        threading.Thread(target=close, name="leader-producer-close", daemon=True).start()


def _landed_at(landed: list[RecordMetadata | None], i: int) -> DeliveryCallback:
    """A delivery callback that files record ``i``'s metadata (errors surface from the commit)."""

    def done(md: RecordMetadata | None, err: LogError | None) -> None:
        landed[i] = md

    return done


def _all_landed(landed: list[RecordMetadata | None]) -> list[RecordMetadata]:
    """The committed records' metadata; the log reports every record of a committed transaction."""
    missing = [i for i, md in enumerate(landed) if md is None]
    if missing:
        raise LogError(f"the log reported no offset for record(s) {missing} of a committed transaction")
    return [md for md in landed if md is not None]


def _close(producer: Producer) -> None:
    # Whatever closing a retired producer raises is moot: it writes nothing more. A producer fenced while a
    # transaction was in flight (a leader cut off from the broker) raises from librdkafka's flush, not always
    # as a LogError (confluent-kafka has raised SystemError there), which must not end as an unhandled
    # exception in this thread.
    try:
        producer.close()
    except Exception as e:
        log.debug("closing an old leader producer: %r", e)


def _close_in_background(producer: Producer) -> None:
    threading.Thread(target=_close, args=(producer,), name="leader-producer-close", daemon=True).start()


class AppenderSlot:
    """The leader's appender while this node leads, else empty: the election fills and empties it, the store
    appends through ``current()`` (it is the store's ``AppenderProvider``)."""

    def __init__(self) -> None:
        self._appender: LeaderAppender | None = None

    def current(self) -> LeaderAppender | None:
        return self._appender

    def hold(self, appender: LeaderAppender) -> None:
        self._appender = appender

    def take(self) -> LeaderAppender | None:
        """Empty the slot; the appender it held, if any."""
        appender, self._appender = self._appender, None
        return appender


class Election:
    """This node's view of leadership: whether it leads, and where the leader is.

    ``is_leader`` and ``leader`` are plain attributes, read without a lock by the forwarder on the event loop."""

    def __init__(
        self,
        log_backend: Log,
        store: Store,
        appenders: AppenderSlot,
        *,
        topic: str,
        group: str,
        url: str,
        eligible: bool,
        timeout: float,
        takeover_after: float,
        session_timeout: float = ELECTION_SESSION_TIMEOUT,
        more_stores: Sequence[LogStore[Any]] = (),
    ) -> None:
        """``more_stores``: the other topics the leader writes (the DEK registry's), caught up with ``store``
        before this node takes writes."""
        self.log = log_backend
        self.store = store
        self.stores: tuple[LogStore[Any], ...] = (store, *more_stores)
        self.appenders = appenders  # the store's AppenderProvider
        self.topic = topic
        self.group = group
        self.url = url
        self.eligible = eligible
        self.timeout = timeout
        self.transactional_id = transactional_id_for(group)
        self.is_leader = False
        self.leader: Announcement | None = None  # highest generation announced
        self._tp = TopicPartition(topic, 0)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._watched = OffsetWatcher()  # how far the watcher has read the election topic
        self._watcher: PartitionFollower | None = None
        self._owns_partition = False
        self._retry_at = 0.0  # when the member may (again) try to take leadership
        self._session_timeout = session_timeout
        #: seconds the leader's address must refuse connections before this node claims the takeover; 0: never
        self.takeover_after = takeover_after
        self._suspect: _Suspicion | None = None  # set by the forwarder (event loop), acted on by the member
        self._claims: dict[int, str] = {}  # generation -> the first node that claimed to replace its leader
        self._claim_producer: Producer | None = None
        self._lock = threading.RLock()  # leadership changes come from the member thread and from writers

    @property
    def leader_url(self) -> str | None:
        return self.leader.url if self.leader is not None else None

    def leader_unreachable(self, url: str) -> None:
        """The forwarder could not reach the leader at ``url``: if this node may lead, it starts checking
        whether that leader is gone (see the module docstring). Cheap and non-blocking."""
        current = self.leader
        if not self.takeover_after or not self.eligible or self.is_leader or current is None or current.url != url:
            return
        if self._suspect is not None and self._suspect.leader == current:
            return
        self._suspect = _Suspicion(current, time.monotonic())

    # ---- lifecycle --------------------------------------------------------------------------------------

    def ensure_topic(self) -> None:
        info = self.log.ensure_topic(self.topic, 1, compacted=True)
        log.info("election topic %r: %d partition, group %r", info.name, info.partitions, self.group)

    def start(self) -> None:
        client_id = f"schemakit-leader-watch-{self.topic}"
        consumer = self.log.consumer(None, client_id=client_id)
        consumer.assign({self._tp: OFFSET_BEGINNING})
        self._watcher = PartitionFollower(
            self.log, self._tp, self._read, consumer=consumer, offset=0, client_id=client_id, max_records=500
        )
        self._watcher.start("election-watch")
        if not self.eligible:
            log.info("not leader-eligible: this node never leads; it forwards writes to the announced leader")
            return
        self._member = self.log.consumer(self.group, client_id=f"schemakit-leader-member-{self.url}")
        self._member.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked)
        self._spawn("election-member", self._member_forever)

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def close(self) -> None:
        """Leave the group (stepping down) and stop following the election topic."""
        self._stop.set()
        for t in self._threads:
            t.join(self.timeout)
        if self._watcher is not None:
            self._watcher.close()
        self._watched.close()

    # ---- the watcher: who leads -------------------------------------------------------------------------

    def _read(self, batch: list[Record]) -> bool:
        """The watcher's batch of election records (in the watcher's thread)."""
        for r in batch:
            if r.key == ANNOUNCE_KEY:
                self._announced(decode_announcement(r.value))
            elif r.key == CLAIM_KEY and (claim := decode_claim(r.value)) is not None:
                self._claims.setdefault(*claim)
        self._watched.advance(batch[-1].offset)
        return True

    def _announced(self, a: Announcement | None) -> None:
        if a is None or (self.leader is not None and a.generation <= self.leader.generation):
            return
        self.leader = a
        who = "this node" if a.url == self.url else a.url
        log.info("leader: %s (generation %d)", who, a.generation)
        if a.url != self.url and self.is_leader:
            # Whoever announced a newer generation fenced our producer first; stop before a write finds out,
            # and (should the group still give us partition 0) let things settle before leading again.
            self._retry_at = time.monotonic() + 2 * self._session_timeout
            self._step_down(f"{a.url} leads now (generation {a.generation})")

    # ---- the member: leading ----------------------------------------------------------------------------

    def _assigned(self, partitions: list[TopicPartition]) -> None:
        if self._tp in partitions:
            self._owns_partition = True
            self._retry_at = 0.0

    def _revoked(self, partitions: list[TopicPartition]) -> None:
        if self._tp in partitions:
            self._owns_partition = False
            self._step_down("partition 0 of the election topic was revoked (group rebalance)")

    def _member_forever(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self._member.poll(0.2, 100)  # records are irrelevant: ownership is the signal
                except LogError as e:
                    log.error("election group %r: %s; retrying", self.group, e)
                    time.sleep(0.5)
                    continue
                except Exception:  # never die silently: a member that stops polling leaves the group
                    log.exception("election group %r: polling failed unexpectedly; retrying", self.group)
                    time.sleep(0.5)
                    continue
                if self._owns_partition and self.appenders.current() is None and time.monotonic() >= self._retry_at:
                    try:
                        self._become_leader()
                    except ProducerFencedError as e:
                        # Someone initialised the transactional id after us: we are probably a zombie
                        # whose consumer has not noticed yet. Let the group settle first.
                        log.warning("could not take leadership, fenced: %s", e)
                        self._retry_at = time.monotonic() + 2 * self._session_timeout
                    except Exception as e:  # any other failure: stay a follower, try again shortly
                        log.warning("could not take leadership: %s; retrying in 1s", e)
                        self._retry_at = time.monotonic() + 1.0
                elif self._suspect is not None:
                    self._check_suspect(self._suspect)
        finally:
            try:
                self._member.close()  # leaves the group; _revoked steps down
            finally:
                self._step_down("shutting down")
                if self._claim_producer is not None:
                    _close(self._claim_producer)

    def _check_suspect(self, suspect: _Suspicion) -> None:
        """One look at a suspected leader (from the member thread): drop the doubt, or take over once its
        address has refused connections for the suspicion's whole patience."""
        if self.is_leader or self.leader != suspect.leader or not refuses_connections(suspect.leader.url):
            self._suspect = None  # a newer leader, or the old one answers (or cannot be judged): not our call
            return
        waited = time.monotonic() - suspect.since
        if waited < self.takeover_after:
            return
        self._suspect = None
        dead = suspect.leader
        try:
            winner = self._claim_takeover(dead.generation)
            if winner != self.url:
                log.info("the leader %s is gone; %s claimed the takeover first", dead.url, winner)
                return
            log.warning(
                "the leader %s (generation %d) has refused connections for %.1fs: its process is gone; "
                "taking over without waiting for the group's session timeout",
                dead.url,
                dead.generation,
                waited,
            )
            self._become_leader(replacing=dead)
        except Exception as e:  # someone else was faster (we were fenced) or the log failed: stay a follower
            log.warning("could not take over from %s: %s", dead.url, e)

    def _claim_takeover(self, generation: int) -> str | None:
        """Bid to replace the leader of ``generation``; the node whose bid comes first in the election
        topic (read up to our own) wins, so followers that noticed together do not fence each other."""
        if self._claim_producer is None:
            self._claim_producer = self.log.producer()
        md = self._claim_producer.produce(
            self.topic, encode_claim(self.url, generation), CLAIM_KEY, partition=0, timeout=self.timeout
        )
        if not self._watched.wait_blocking(md.offset, self.timeout):
            raise LogError(f"election topic {self.topic!r}: did not read up to our claim at offset {md.offset}")
        return self._claims.get(generation)

    def _become_leader(self, replacing: Announcement | None = None) -> None:
        """Take leadership: as the owner of partition 0 (``replacing`` None), or in place of a dead leader
        ``replacing``, unless another node has replaced it already."""
        if replacing is not None and self.leader != replacing:
            return
        started = time.monotonic()
        producer = self.log.producer(self.transactional_id)
        try:
            producer.init_transactions(self.timeout)  # fences any older leader's producer
            # 1. The highest generation so far: read the election topic up to a probe of our own.
            probe_appender = LeaderAppender(producer, [(HEADER_LEADER, self.url.encode())], self._fenced)
            (probe,) = probe_appender.append([(self.topic, PROBE_KEY, None)], self.timeout)
            if not self._watched.wait_blocking(probe.offset, self.timeout):
                raise LogError(f"election topic {self.topic!r}: did not read up to offset {probe.offset} in time")
            generation = (self.leader.generation if self.leader is not None else 0) + 1
            headers = [(HEADER_LEADER, self.url.encode()), (HEADER_GENERATION, str(generation).encode())]
            appender = LeaderAppender(producer, headers, self._fenced)
            # 2. Catch up with _schemas (and the other stores) before allocating ids or versions: a NOOP barrier
            # in each through the fenced producer.
            noops = appender.append([(s.topic, NOOP_KEY, None) for s in self.stores], self.timeout)
            for s, md in zip(self.stores, noops, strict=True):
                if not s.applied.wait_blocking(md.offset, self.timeout):
                    raise LogError(f"{s.topic!r}: not applied up to offset {md.offset} in time")
            noop = noops[0]
            if (replacing is None and not self._owns_partition) or self._stop.is_set():
                raise LogError("lost partition 0 while taking leadership")
            # 3. Take writes, then tell the others.
            with self._lock:
                self.appenders.hold(appender)
                self.is_leader = True
            appender.append(
                [(self.topic, ANNOUNCE_KEY, encode_announcement(Announcement(self.url, generation)))], self.timeout
            )
        except BaseException:
            self._step_down("taking leadership failed")
            _close_in_background(producer)
            raise
        log.info(
            "this node is the leader now (generation %d, caught up to offset %d of %s in %.2fs)",
            generation,
            noop.offset,
            self.store.topic,
            time.monotonic() - started,
        )

    def _fenced(self, why: str) -> None:
        log.warning("fenced by a newer leader, stepping down: %s", why)
        # If the group still says we own partition 0 after a session timeout, the fencing was not a
        # newer leader (e.g. a fatal producer error): then try to lead again.
        self._retry_at = time.monotonic() + 2 * self._session_timeout
        self._step_down("fenced")

    def _step_down(self, why: str) -> None:
        with self._lock:
            appender = self.appenders.take()
            was_leader = self.is_leader
            self.is_leader = False
        if appender is not None:
            appender.retire()
        if was_leader:
            log.info("this node is no longer the leader: %s", why)
