"""The fault injection of ``tests/support/faults.py`` does what it says: a delay is measured, a blackhole drops, a
reset resets, one direction is cut alone, and nothing is left behind (not even by a killed run)."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tests.support.faults import Hub, Namespace, Peer, TcpProxy, sweep_stale


class EchoServer:
    """A TCP server on the hub that echoes every chunk back (threads, so the test's own loop is free)."""

    def __init__(self, host: str) -> None:
        self.sock = socket.create_server((host, 0))
        self.address: tuple[str, int] = self.sock.getsockname()[:2]
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        with conn:
            try:
                while data := conn.recv(65536):
                    conn.sendall(data)
            except OSError:
                pass


@pytest.fixture
def echo(fault_hub: Hub) -> Iterator[EchoServer]:
    server = EchoServer(fault_hub.address)
    yield server
    server.sock.close()


def round_trip(sock: socket.socket, payload: bytes = b"ping") -> float:
    started = time.monotonic()
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(65536)
        assert chunk, "connection closed"
        got += chunk
    assert got == payload
    return time.monotonic() - started


def test_the_proxy_delay_is_measured_on_each_round_trip(echo: EchoServer, fault_hub: Hub) -> None:
    proxy = TcpProxy(echo.address, listen_host=fault_hub.address)
    try:
        with socket.create_connection(proxy.address, timeout=10) as sock:
            plain = min(round_trip(sock) for _ in range(5))
            with proxy.delayed(0.15):
                delayed = [round_trip(sock) for _ in range(3)]
            after = round_trip(sock)
    finally:
        proxy.close()
    print(f"\nround trip: {plain * 1000:.1f} ms plain, {[round(d * 1000) for d in delayed]} ms at 150 ms each way")
    assert plain < 0.1
    assert all(0.3 <= d < 1.5 for d in delayed), delayed  # 150 ms up and 150 ms down
    assert after < 0.2


def test_the_proxy_blackhole_and_reset(echo: EchoServer, fault_hub: Hub) -> None:
    proxy = TcpProxy(echo.address, listen_host=fault_hub.address)
    try:
        with socket.create_connection(proxy.address, timeout=1.0) as sock:
            round_trip(sock)
            with proxy.blackholed(), pytest.raises(TimeoutError):
                round_trip(sock)
        with socket.create_connection(proxy.address, timeout=5) as sock:
            round_trip(sock)
            with proxy.resetting():
                time.sleep(0.2)  # the proxy resets open connections on its own loop
                with pytest.raises(ConnectionResetError):
                    sock.sendall(b"x")
                    sock.recv(10) or sock.recv(10)
    finally:
        proxy.close()
    assert proxy.stats.resets >= 1


def test_a_namespace_reaches_the_hub_and_a_cut_drops_silently(
    echo: EchoServer, make_namespace: Callable[[], Namespace]
) -> None:
    ns = make_namespace()
    with ns.connect(echo.address) as sock:
        round_trip(sock)
        with ns.cut(Peer(*echo.address)):
            sock.settimeout(1.0)
            with pytest.raises(TimeoutError):  # no error, no answer: a blackhole
                round_trip(sock)
            with pytest.raises(TimeoutError):
                ns.connect(echo.address, timeout=1.0)
        sock.settimeout(10)
        sock.recv(65536)  # the held-back echo arrives once healed (TCP retransmits)
    with ns.connect(echo.address) as sock:
        round_trip(sock)


def test_a_reset_fault_resets_open_and_new_connections(
    echo: EchoServer, make_namespace: Callable[[], Namespace]
) -> None:
    ns = make_namespace()
    with ns.connect(echo.address) as sock:
        round_trip(sock)
        with ns.resetting(Peer(*echo.address)):
            with pytest.raises(ConnectionError):
                sock.sendall(b"x")
                sock.recv(10)
            with pytest.raises(ConnectionRefusedError):
                ns.connect(echo.address)
    with ns.connect(echo.address) as sock:
        round_trip(sock)


def test_one_direction_is_cut_alone(fault_hub: Hub, make_namespace: Callable[[], Namespace]) -> None:
    ns = make_namespace()
    outside = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    outside.bind((fault_hub.address, 0))
    outside.settimeout(1.0)
    inside = ns.open_socket(socket.SOCK_DGRAM)
    inside.bind((ns.address, 0))
    inside.settimeout(1.0)
    try:
        with ns.cut(Peer(fault_hub.address), direction="out"):
            with contextlib.suppress(PermissionError):  # Linux reports a send dropped on its way out
                inside.sendto(b"from inside", outside.getsockname())
            with pytest.raises(TimeoutError):
                outside.recvfrom(100)
            outside.sendto(b"from outside", inside.getsockname())
            assert inside.recvfrom(100)[0] == b"from outside"
        inside.sendto(b"healed", outside.getsockname())
        assert outside.recvfrom(100)[0] == b"healed"
    finally:
        inside.close()
        outside.close()


def test_a_fault_heals_itself_after_its_bound(echo: EchoServer, make_namespace: Callable[[], Namespace]) -> None:
    ns = make_namespace()
    with ns.cut(Peer(*echo.address), bound=0.5):
        time.sleep(1.0)
        with ns.connect(echo.address, timeout=2.0) as sock:
            round_trip(sock)


def test_cleanup_leaves_nothing(make_namespace: Callable[[], Namespace]) -> None:
    ns = make_namespace()
    ns.close()
    assert ns.name not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert subprocess.run(["ip", "link", "show", ns.host_if], capture_output=True).returncode != 0


def test_what_a_killed_run_left_is_swept(fault_hub: Hub) -> None:
    script = (
        "from tests.support.faults import Hub, Namespace\n"
        "ns = Namespace(); hub = Hub()\n"
        "print(ns.name, ns.host_if, hub.address, flush=True)\n"
        "import time; time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    name, host_if, address = proc.stdout.readline().split()
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert name in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout

    removed = sweep_stale()

    assert name in removed and f"{address}/32" in removed
    assert name not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert subprocess.run(["ip", "link", "show", host_if], capture_output=True).returncode != 0
    assert address not in subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout


def test_a_bandwidth_cap_slows_what_leaves_the_namespace(
    echo: EchoServer, make_namespace: Callable[[], Namespace]
) -> None:
    ns = make_namespace()
    payload = b"x" * 128 * 1024  # 1 Mbit
    with ns.connect(echo.address, timeout=30) as sock:
        plain = round_trip(sock, payload)
        with ns.throttled("1mbit"):
            capped = round_trip(sock, payload)
        after = round_trip(sock, payload)
    print(
        f"\n128 KiB round trip: {plain * 1000:.0f} ms plain, {capped * 1000:.0f} ms at 1 Mbit/s, "
        f"{after * 1000:.0f} ms after"
    )
    assert capped > 0.7 and capped > 10 * plain and after < capped / 5


def test_a_lossy_link_drops_a_share_of_the_packets(fault_hub: Hub, make_namespace: Callable[[], Namespace]) -> None:
    ns = make_namespace()
    outside = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    outside.bind((fault_hub.address, 0))
    outside.settimeout(0.5)
    inside = ns.open_socket(socket.SOCK_DGRAM)
    try:
        with ns.lossy(Peer(fault_hub.address), 0.3):
            for i in range(60):
                with contextlib.suppress(PermissionError):  # a datagram dropped on its way out
                    inside.sendto(b"%d" % i, outside.getsockname())
            received = 0
            with contextlib.suppress(TimeoutError):
                while True:
                    outside.recvfrom(100)
                    received += 1
    finally:
        inside.close()
        outside.close()
    print(f"\n{received} of 60 datagrams arrived at 30% loss")
    assert 10 <= received < 60  # all 60 at 30% loss: 0.7**60, about 5e-10
