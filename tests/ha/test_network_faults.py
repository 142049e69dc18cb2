"""The highly available registry under network faults (``tests/support/faults.py``): three instances, each in
a network namespace of its own, on the fault tests' broker; eight clients writing and reading; the invariants
(``tests/support/invariants.py``) checked after each fault. The tests share clusters (``module_net_cluster``, one
per store timeout): each fault heals and kills no instance, and each test writes subjects of its own."""

from __future__ import annotations

import json
import socket
import struct
import time
import uuid
from collections.abc import Callable

import httpx
import pytest

from tests.ha.load import Workload, schema_text
from tests.support.broker import TEST_CLIENT_OPTIONS
from tests.support.faults import Peer
from tests.support.invariants import Ack, check_registry_invariants
from tests.support.net_cluster import NetCluster
from tests.support.registry_cluster import wait_writable
from tests.support.waiting import wait_for

pytestmark = pytest.mark.kafka

SESSION_TIMEOUT = int(TEST_CLIENT_OPTIONS["session.timeout.ms"]) / 1000
STORE_TIMEOUT_MS = 4000  # the cut tests' --store-timeout-ms


def acked_count(load: Workload) -> int:
    return len(load.outcome.acked)


def test_a_leader_cut_off_from_the_broker_is_replaced_and_acknowledges_nothing_lost(
    module_net_cluster: Callable[..., NetCluster],
) -> None:
    net = module_net_cluster("--store-timeout-ms", str(STORE_TIMEOUT_MS))
    old, first = net.leader()
    with Workload(net.urls(), f"cut-{uuid.uuid4().hex[:6]}") as load:
        wait_for(lambda: acked_count(load) >= 20, timeout=30, what="the load to flow")
        acked_before = acked_count(load)
        with old.ns.cut(net.broker.peer, bound=60):
            cut_at = time.monotonic()
            new, _ = net.leader(newer_than=first["generation"])
            elected_after = time.monotonic() - cut_at
            acked_at_election = acked_count(load)
            # writes go on through the new leader while the old one is still cut off (once the writes in flight
            # at the old one have timed out: clients pinned to it wait out the store timeout); the cut lasts
            # until a write was acknowledged after the election and the old leader's writes have timed out
            wait_for(lambda: acked_count(load) > acked_at_election, timeout=8, what="a write acked by the new leader")
            time.sleep(max(0.0, cut_at + STORE_TIMEOUT_MS / 1000 + 1 - time.monotonic()))
            acked_while_cut = acked_count(load) - acked_at_election
            cut_for = time.monotonic() - cut_at
        wait_writable([old.url], f"cut-healed-{uuid.uuid4().hex[:6]}")
        time.sleep(1)
    outcome = load.outcome
    print(
        f"\nnew leader {elected_after:.1f} s after the cut; acked {acked_before} before, {acked_while_cut} after the "
        f"election (cut for {cut_for:.1f} s), {len(outcome.acked)} in all; {len(outcome.write_errors)} writes failed, "
        f"{len(outcome.read_errors)} reads failed"
    )
    assert new is not old
    # the group expires the cut-off member after its session timeout, then gives partition 0 to another
    assert elected_after < 3 * SESSION_TIMEOUT + 5, elected_after
    assert acked_while_cut > 0
    check_registry_invariants(net.urls(), outcome.acked)


def test_a_follower_cut_off_from_the_leader_fails_writes_with_50003_and_reads_go_on(
    module_net_cluster: Callable[..., NetCluster],
) -> None:
    net = module_net_cluster("--store-timeout-ms", str(STORE_TIMEOUT_MS))
    leader, _ = net.leader()
    follower = next(n for n in net.nodes if n is not leader)
    subject = f"split-{uuid.uuid4().hex[:6]}"
    acked = []
    with httpx.Client(timeout=30) as http:
        r = http.post(f"{follower.url}/subjects/{subject}/versions", json={"schema": schema_text(0)})
        assert r.status_code == 200, r.text
        acked.append(Ack(subject, schema_text(0), r.json()["id"]))
        # The follower's pooled connection to the leader is closed after 5 s idle (httpx's keep-alive expiry):
        # the write below then opens a new one, which the cut times out (connect timeout, 5 s). A request on a
        # connection already open waits for the forwarding read timeout instead (60 s, as Confluent's
        # leader.read.timeout.ms), too long for this suite.
        time.sleep(5.5)
        with follower.ns.cut(Peer(leader.peer_proxy.listen_host, leader.peer_proxy.port), bound=60):
            started = time.monotonic()
            r = http.post(f"{follower.url}/subjects/{subject}/versions", json={"schema": schema_text(1)})
            took = time.monotonic() - started
            refused = r.json()
            assert took < 15, took
            assert (r.status_code, refused["error_code"]) == (500, 50003), r.text
            assert refused["message"] == "Error while forwarding register schema request to the leader", r.text
            # reads on the follower go on, answered from its own state
            got = http.get(f"{follower.url}/subjects/{subject}/versions/latest")
            assert got.status_code == 200 and got.json()["id"] == acked[0].id
            # and the leader, and the other follower, still take writes
            for node in net.nodes:
                if node is not follower:
                    r = http.post(f"{node.url}/subjects/{subject}/versions", json={"schema": schema_text(2)})
                    assert r.status_code == 200, r.text
                    acked.append(Ack(subject, schema_text(2), r.json()["id"]))
            # the follower's reader still follows the log (it reaches the broker): it sees those writes
            check_registry_invariants(net.urls(), acked)
        print(f"\nforwarding to an unreachable leader failed after {took:.1f} s with {refused}")
        wait_writable([follower.url], f"{subject}-healed")
    check_registry_invariants(net.urls(), acked)


def test_a_broker_at_500ms_latency_slows_writes_without_errors(module_net_cluster: Callable[..., NetCluster]) -> None:
    net = module_net_cluster()  # the registry's own store timeout: the slowest write here waits ~13 s
    with Workload(net.urls(), f"slow-{uuid.uuid4().hex[:6]}") as load:
        wait_for(lambda: len(load.outcome.write_seconds) >= 16, timeout=30, what="writes before the latency")
        fast = sorted(load.outcome.write_seconds)
        with net.broker.proxy.delayed(0.25, bound=60):  # 250 ms each way: a 500 ms round trip
            time.sleep(1)
            slow_from = len(load.outcome.write_seconds)
            time.sleep(15)
            slow = sorted(load.outcome.write_seconds[slow_from:])
    outcome = load.outcome
    p99 = slow[min(len(slow) - 1, int(len(slow) * 0.99))]
    print(
        f"\nwrites: median {fast[len(fast) // 2] * 1000:.0f} ms before, at 500 ms round trips median "
        f"{slow[len(slow) // 2] * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms ({len(slow)} writes)"
    )
    assert not outcome.write_errors, outcome.write_errors[:5]
    assert not outcome.read_errors, outcome.read_errors[:5]
    assert slow and slow[len(slow) // 2] > 0.5  # the latency is felt
    # and bounded: the leader commits one transaction per write (about 2 round trips each, one after the
    # other), so 8 clients queue for about 8 of them; no write waits out a client's 30 s timeout
    assert p99 < 25.0
    check_registry_invariants(net.urls(), outcome.acked)


def _register_and_reset_midway(address: tuple[str, int], subject: str, schema: str) -> None:
    """Send a registration's headers and half its body, then reset the connection (a client killed mid-request)."""
    body = json.dumps({"schema": schema}).encode()
    head = (
        f"POST /subjects/{subject}/versions HTTP/1.1\r\nHost: {address[0]}\r\n"
        f"Content-Type: application/vnd.schemaregistry.v1+json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(head.encode() + body[: len(body) // 2])
        time.sleep(0.2)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def test_client_connections_reset_mid_request_leave_nothing_half_applied(
    module_net_cluster: Callable[..., NetCluster],
) -> None:
    net = module_net_cluster()
    prefix = f"reset-{uuid.uuid4().hex[:6]}"

    # a request cut in its body: nothing of it is applied, anywhere
    for node in net.nodes:
        _register_and_reset_midway((node.process.host, node.process.port), f"{prefix}-torn", schema_text(999))

    # answers lost after the server did the work (every 3rd connection), on every instance's clients
    client_urls = [n.client_proxy.url for n in net.nodes]

    def resets() -> int:
        return sum(n.client_proxy.stats.resets for n in net.nodes)

    with Workload(client_urls, prefix) as load:
        wait_for(lambda: acked_count(load) >= 8, timeout=30, what="the load to flow")
        with (
            net.nodes[0].client_proxy.answerless(every=3),
            net.nodes[1].client_proxy.answerless(every=3),
            net.nodes[2].client_proxy.answerless(every=3),
        ):
            # for at least 2 s, and until answers were lost (at most 6 s)
            held_from = time.monotonic()
            wait_for(lambda: resets() > 0 and load.outcome.write_errors, timeout=6, what="answers lost to resets")
            time.sleep(max(0.0, held_from + 2 - time.monotonic()))
        time.sleep(1)
    outcome = load.outcome
    print(f"\n{resets()} connections reset; {len(outcome.acked)} acked, {len(outcome.write_errors)} failed")
    assert resets() > 0 and outcome.write_errors

    view = check_registry_invariants(net.urls(), outcome.acked)
    assert not any("-torn" in path for path in view), "a request torn in its body was applied"
    # A write whose answer was lost was applied whole or not at all: sent again it gets one id, and the
    # invariants hold with it.
    retried = []
    with httpx.Client(timeout=30) as http:
        for subject, schema in outcome.unacked:
            r = http.post(f"{net.nodes[0].url}/subjects/{subject}/versions", json={"schema": schema})
            assert r.status_code == 200, r.text
            retried.append(Ack(subject, schema, r.json()["id"]))
    check_registry_invariants(net.urls(), [*outcome.acked, *retried])
