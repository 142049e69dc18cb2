"""A registry cluster under network faults: three ``schemakit serve`` processes, each in a network namespace of
its own (``faults.Namespace``), on the fault tests' broker; each reached by the other instances through one proxy on
the hub (its advertised URL) and by clients through another, so that a client fault touches no forwarding.

``tests/ha/conftest.py`` makes ``NetClusterStarter`` the ``start_net_cluster`` fixture.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support.broker import TEST_CLIENT_OPTIONS
from tests.support.faults import FaultBroker, Hub, Namespace, TcpProxy
from tests.support.ports import free_port
from tests.support.registry_cluster import Cluster, ClusterStarter, fast_fetch_log_url, wait_for_leader
from tests.support.registry_process import RegistryProcess


@dataclass
class NetNode:
    process: RegistryProcess
    ns: Namespace
    #: its advertised URL: the other instances forward to it through this proxy, on the hub
    peer_proxy: TcpProxy
    #: the clients' way in (a proxy of their own, so a client fault touches no forwarding)
    client_proxy: TcpProxy

    @property
    def url(self) -> str:
        return self.process.url


@dataclass
class NetCluster:
    cluster: Cluster
    nodes: list[NetNode]
    broker: FaultBroker

    def urls(self) -> list[str]:
        return [n.url for n in self.nodes]

    def by_advertised(self, url: str) -> NetNode:
        return next(n for n in self.nodes if n.peer_proxy.url == url)

    def leader(self, newer_than: int = 0, timeout: float = 30.0) -> tuple[NetNode, dict[str, Any]]:
        """The announced leader once one newer than generation ``newer_than`` exists, and its announcement."""
        found = wait_for_leader(
            self.broker.bootstrap, self.cluster.election_topic, newer_than=newer_than, timeout=timeout
        )
        return self.by_advertised(found["url"]), found


class NetClusterStarter:
    """``start(*extra_args)``: three registry instances in namespaces of their own; ``close()`` stops the
    proxies (the processes and namespaces belong to the fixtures that made them)."""

    def __init__(
        self, start_cluster: ClusterStarter, make_namespace: Callable[[], Namespace], broker: FaultBroker, hub: Hub
    ) -> None:
        self._start_cluster, self._make_namespace, self._broker, self._hub = start_cluster, make_namespace, broker, hub
        self._proxies: list[TcpProxy] = []

    def __call__(self, *extra_args: str) -> NetCluster:
        namespaces = [self._make_namespace() for _ in range(3)]
        ports = [free_port() for _ in range(3)]
        peer = [
            TcpProxy((ns.address, p), listen_host=self._hub.address) for ns, p in zip(namespaces, ports, strict=True)
        ]
        client = [
            TcpProxy((ns.address, p), listen_host=self._hub.address) for ns, p in zip(namespaces, ports, strict=True)
        ]
        self._proxies.extend(peer + client)

        def per_node(i: int) -> tuple[list[str], dict[str, Any]]:
            options = {"wrapper": namespaces[i].wrapper, "host": namespaces[i].address, "port": ports[i]}
            return ["--advertised-url", peer[i].url, *extra_args], options

        log_url = fast_fetch_log_url(self._broker.bootstrap, TEST_CLIENT_OPTIONS)
        cluster = self._start_cluster(3, per_node=per_node, log_url=log_url)
        parts = zip(cluster.nodes, namespaces, peer, client, strict=True)
        return NetCluster(cluster, [NetNode(*part) for part in parts], self._broker)

    def close(self) -> None:
        for proxy in self._proxies:
            proxy.close()
