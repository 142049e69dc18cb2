"""Fixtures for the highly available registry on Kafka: clusters of ``schemakit serve`` processes on the
session's test broker, each cluster on its own store topic, election topic and group
(``tests/support/registry_cluster.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.support.faults import FaultBroker, Hub, Namespace, require_namespaces
from tests.support.net_cluster import NetCluster, NetClusterStarter
from tests.support.registry_cluster import ClusterStarter, default_timing_log_url, fast_fetch_log_url
from tests.support.registry_process import RegistryProcess, RegistryStarter


@pytest.fixture(scope="session")
def ha_log_url(kafka_bootstrap: str, kafka_client_options: dict[str, str]) -> str:
    """``kafka_log_url`` with a short fetch wait (see ``registry_cluster.fast_fetch_log_url``)."""
    return fast_fetch_log_url(kafka_bootstrap, kafka_client_options)


@pytest.fixture(scope="session")
def ha_default_log_url(kafka_bootstrap: str) -> str:
    """The registry's own election timing (see ``registry_cluster.default_timing_log_url``)."""
    return default_timing_log_url(kafka_bootstrap)


@pytest.fixture
def start_cluster(start_registry: Callable[..., RegistryProcess], ha_log_url: str) -> ClusterStarter:
    """``start_cluster(n, eligible=[...], log_url=...)``: n registry processes on one fresh store topic and
    group, on ``ha_log_url`` (fast test timing) unless told otherwise."""
    return ClusterStarter(start_registry, ha_log_url)


@pytest.fixture
def start_net_cluster(
    start_cluster: ClusterStarter, make_namespace: Callable[[], Namespace], faults_broker: FaultBroker, fault_hub: Hub
) -> Iterator[NetClusterStarter]:
    """``start_net_cluster(*extra_args)``: three registry instances, each in its own network namespace, on the
    fault tests' broker (``tests/support/net_cluster.py``)."""
    starter = NetClusterStarter(start_cluster, make_namespace, faults_broker, fault_hub)
    yield starter
    starter.close()


@pytest.fixture(scope="module")
def module_net_cluster(
    tmp_path_factory: pytest.TempPathFactory, faults_broker: FaultBroker, fault_hub: Hub
) -> Iterator[Callable[..., NetCluster]]:
    """``module_net_cluster(*extra_args)``: ``start_net_cluster(*extra_args)`` once per module and arguments, shared
    by the module's tests with those arguments: for faults that heal and kill no instance, each test on subjects of
    its own (a cluster's start is ~10 s of a loaded machine)."""
    require_namespaces()
    registries = RegistryStarter(tmp_path_factory)
    namespaces: list[Namespace] = []

    def make_namespace() -> Namespace:
        namespaces.append(Namespace())
        return namespaces[-1]

    starter = NetClusterStarter(ClusterStarter(registries, ""), make_namespace, faults_broker, fault_hub)
    clusters: dict[tuple[str, ...], NetCluster] = {}

    def cluster(*extra_args: str) -> NetCluster:
        if extra_args not in clusters:
            clusters[extra_args] = starter(*extra_args)
        return clusters[extra_args]

    try:
        yield cluster
    finally:
        starter.close()
        registries.kill_all()
        for ns in namespaces:
            ns.close()
