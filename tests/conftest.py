"""The suite's shared fixtures, each a thin call into ``tests/support/``.

- ``kafka_bootstrap`` (session): ``"host:port"`` of the Kafka-protocol test broker: one tansu broker per
  session (per xdist worker), or the external Kafka named by ``SCHEMAKIT_TEST_KAFKA``.
- ``kafka_caps`` (session): what that broker can do; ``kafka_caps.require("compaction")`` skips a test with
  the reason when it cannot.
- ``kafka_client_options`` (session): librdkafka settings that keep group joins and fetches fast on the
  test broker (tansu holds a JoinGroup for ``session.timeout.ms / 2``); ``kafka_log_url`` (session): a
  ``kafka://`` URL carrying them, for ``open_log``.
- ``registry_url`` (session): one registry server on a fresh SQLite log, shared by tests that use unique
  subjects; ``module_registry`` (module): a server of the test module's own, for tests that need an empty
  registry; ``start_registry``: a factory of servers for tests that need their own (restarts, several
  instances, TLS and authentication), each stopped at teardown.
- ``schema_types`` / ``require_type``: what ``GET /schemas/types`` lists, and a probe that skips a test
  without it.
- ``pki`` (session), ``issuer``, ``users_file``: certificates, a token issuer, a users file.

A failed test that ran streams instances as subprocesses (``tests/streams/instances.py``) shows the end of
each one's log. And how ``--dist loadfile`` hands files to the workers: the longest first, by the last run's times, and
``tests/spark`` and the network fault tests each to one worker (``tests/support/scheduling.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.streams.instances import Instance
from tests.support.broker import TEST_CLIENT_OPTIONS, KafkaCaps, broker_caps, broker_log_url, running_broker
from tests.support.credentials import Issuer, Pki, UsersFile
from tests.support.faults import FaultBroker, Hub, Namespace, fault_broker, require_namespaces, sweep_stale
from tests.support.registry_process import RegistryProcess, RegistryStarter
from tests.support.registry_process import schema_types as listed_schema_types
from tests.support.scheduling import (
    CACHE_KEY,
    LongestFirstFileScheduling,
    UnitTimer,
    order_longest_first,
    recorded_times,
)

_unit_timer = UnitTimer()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test that ran streams instances as subprocesses shows the end of each one's log."""
    report = yield
    if report.when == "call":
        if report.failed:
            for instance in Instance.started:
                report.sections.append((f"instance {instance.name}: end of its log", instance.log_tail()))
        Instance.started.clear()
    return report


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LongestFirstFileScheduling | None:
    return LongestFirstFileScheduling(config, log) if config.getoption("dist") == "loadfile" else None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    # Every worker gets the controller's record of the last run's times, so all of them order alike.
    cache = getattr(node.config, "cache", None)
    if node.config.getoption("dist") == "loadfile" and cache is not None:
        node.workerinput[CACHE_KEY] = recorded_times(cache)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # In a worker of a --dist loadfile run, whose collection order is the order units are handed out in.
    times = getattr(config, "workerinput", {}).get(CACHE_KEY)
    if times is not None:
        order_longest_first(items, times)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _unit_timer.add(report)


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Recorded by the process that sees every report: the xdist controller, or a run without workers.
    if not hasattr(session.config, "workerinput") and getattr(session.config, "cache", None) is not None:
        _unit_timer.save(session.config.cache)


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_broker(tmp_path_factory.mktemp("tansu") / "broker.log") as bootstrap:
        yield bootstrap


@pytest.fixture(scope="session")
def kafka_caps(kafka_bootstrap: str) -> KafkaCaps:
    return broker_caps(kafka_bootstrap)


@pytest.fixture(scope="session")
def kafka_client_options() -> dict[str, str]:
    return dict(TEST_CLIENT_OPTIONS)


@pytest.fixture(scope="session")
def kafka_log_url(kafka_bootstrap: str, kafka_client_options: dict[str, str]) -> str:
    return broker_log_url(kafka_bootstrap, kafka_client_options)


@pytest.fixture(scope="session")
def fault_hub() -> Iterator[Hub]:
    """The hub address of the network fault tests (``tests/support/faults.py``); skips where namespaces cannot
    be made. What a killed run left behind is removed first."""
    require_namespaces()
    sweep_stale()
    hub = Hub()
    yield hub
    hub.close()


@pytest.fixture(scope="session")
def faults_broker(fault_hub: Hub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultBroker]:
    """A tansu broker of the fault tests' own, reachable from every namespace, behind a latency proxy. It is
    tansu even where ``SCHEMAKIT_TEST_KAFKA`` names another broker: the fault tests need the broker to
    advertise their proxy's address."""
    with fault_broker(fault_hub, tmp_path_factory.mktemp("fault-tansu") / "broker.log") as broker:
        yield broker


@pytest.fixture
def make_namespace() -> Iterator[Callable[[], Namespace]]:
    """``make_namespace()``: a fresh network namespace joined to the hub, deleted after the test."""
    require_namespaces()
    made: list[Namespace] = []

    def make() -> Namespace:
        made.append(Namespace())
        return made[-1]

    yield make
    for ns in made:
        ns.close()


@pytest.fixture
def start_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryStarter]:
    starter = RegistryStarter(tmp_path_factory)
    yield starter
    starter.kill_all()


@pytest.fixture(scope="session")
def registry_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    rp = RegistryProcess.on_sqlite(tmp_path_factory.mktemp("shared-registry")).start()
    yield rp.url
    rp.stop()


@pytest.fixture(scope="module")
def module_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryProcess]:
    """A registry of the test module's own: its state starts empty, and it stops after the module."""
    rp = RegistryProcess.on_sqlite(tmp_path_factory.mktemp("module-registry")).start()
    yield rp
    rp.stop()


@pytest.fixture(scope="session")
def schema_types(registry_url: str) -> list[str]:
    return listed_schema_types(registry_url)


@pytest.fixture
def require_type(schema_types: list[str]) -> Callable[[str], None]:
    """Capability probe: skip when the registry does not list the schema type under /schemas/types."""

    def require(kind: str) -> None:
        if kind not in schema_types:
            pytest.skip(f"registry does not support {kind} yet (GET /schemas/types = {schema_types})")

    return require


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki")).make()


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    i = Issuer()
    yield i
    i.close()


@pytest.fixture
def users_file(tmp_path: Path) -> UsersFile:
    return UsersFile(tmp_path / f"users-{uuid.uuid4().hex[:6]}.json")
