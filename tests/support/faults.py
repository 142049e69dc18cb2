"""Network faults for tests: one network namespace per process, and a TCP proxy, each fault bounded in time.

Kafka clients connect to the address the broker advertises, so a proxy in front of the bootstrap address alone
is bypassed after the first metadata call. Here each process under test runs in a network namespace of its own
(``ip netns``), joined to the host by a veth pair; every shared service (the fault broker, the proxies) listens
on a *hub* address put on the host's loopback device, which each namespace reaches through its veth (no
forwarding between namespaces is needed: the hub is local to the host). Then, per namespace:

- ``cut``: drop (blackhole) the traffic to and from a peer, both directions or one only (iptables ``DROP``);
- ``resetting``: answer every packet to a peer with a TCP reset (iptables ``REJECT --reject-with tcp-reset``);
- ``lossy``: drop a share of the packets at random (iptables ``statistic``);
- ``throttled``: cap the bandwidth of the veth (``tc tbf``).

Latency is injected by ``TcpProxy`` (``delayed``), in user space: the kernels this suite runs on are built
without ``sch_netem``, and a proxy delays one direction or both at a chosen rate on any kernel. The fault broker
(``fault_broker``) advertises a proxy's address, so every client of the broker goes through that proxy and a
latency fault reaches all of them. The proxy also blackholes, resets and resets mid-request (``answerless``:
the request reaches the server, the answer never reaches the client). ``small_disk`` runs a process with a small
private tmpfs: a full disk.

Every fault is a context manager that undoes itself on exit (also when the test fails) and at the latest after
its ``bound`` in seconds (a timer heals it). Names carry the owning process's pid, so parallel pytest workers do
not collide, and ``sweep_stale`` removes what a killed run left behind (namespaces and hub addresses whose pid
is gone). ``require_namespaces`` skips a test, naming the reason, where namespaces cannot be made.
"""

from __future__ import annotations

import asyncio
import ctypes
import fcntl
import ipaddress
import os
import re
import shutil
import socket
import struct
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.broker import TansuBroker
from tests.support.ports import free_port

PREFIX = "skf"
#: namespaces' /30 subnets are carved from here, hub addresses from HUB_NET
SUBNETS = ipaddress.ip_network("10.213.0.0/16")
HUB_NET = ipaddress.ip_network("10.212.0.0/24")
_LOCK = Path("/run/schemakit-faults.lock")
CLONE_NEWNET = 0x40000000
_NETNS_NAME = re.compile(rf"^{PREFIX}-(\d+)-(\w+)$")
_HUB_LABEL = re.compile(rf"lo:{PREFIX}(\d+)\b")


def _run(*cmd: str) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_why_not: list[str | None] = []


def namespaces_unavailable() -> str | None:
    """Why network namespaces cannot be used here (``None`` when they can); probed once per process."""
    if not _why_not:
        _why_not.append(_probe())
    return _why_not[0]


def _probe() -> str | None:
    if os.geteuid() != 0:
        return "network fault tests need root (ip netns, veth, iptables)"
    for tool, package in (("ip", "iproute2"), ("tc", "iproute2"), ("iptables", "iptables")):
        if shutil.which(tool) is None:
            return f"{tool} not found: install it with `make fault-tools` (as root), or apt-get install {package}"
    name = f"{PREFIX}-{os.getpid()}-probe"
    try:
        _run("ip", "netns", "add", name)
        _run("ip", "netns", "exec", name, "iptables", "-A", "OUTPUT", "-j", "ACCEPT")
    except RuntimeError as e:
        return f"this kernel or container cannot make network namespaces with iptables: {e}"
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return None


def require_namespaces() -> None:
    """Skip the calling test, with the reason, where network namespaces cannot be made."""
    reason = namespaces_unavailable()
    if reason is not None:
        pytest.skip(reason)


@contextmanager
def _allocation_lock() -> Iterator[None]:
    with _LOCK.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def sweep_stale() -> list[str]:
    """Remove the namespaces and hub addresses of runs whose process is gone; returns what it removed."""
    removed = []
    for line in _run("ip", "netns", "list").splitlines():
        name = line.split()[0] if line.strip() else ""
        m = _NETNS_NAME.match(name)
        if m and not _alive(int(m.group(1))):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
            if m.group(2).isdigit():  # its veth goes with it, but asynchronously: delete the host end now
                subprocess.run(["ip", "link", "del", f"{PREFIX}{m.group(2)}h"], capture_output=True)
            removed.append(name)
    for line in _run("ip", "-o", "-4", "addr", "show", "dev", "lo").splitlines():
        m = _HUB_LABEL.search(line)
        if m and not _alive(int(m.group(1))):
            cidr = line.split()[3]
            subprocess.run(["ip", "addr", "del", cidr, "dev", "lo"], capture_output=True)
            removed.append(cidr)
    return removed


def _used_addresses() -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    used = set()
    for line in _run("ip", "-o", "-4", "addr", "show").splitlines():
        used.add(ipaddress.ip_interface(line.split()[3]).ip)
    return used


@dataclass(frozen=True)
class Peer:
    """Where a fault applies: a host, and optionally one TCP port on it."""

    host: str
    port: int | None = None

    def match(self, direction: str) -> list[str]:
        """iptables arguments matching packets to this peer (``out``) or from it (``in``)."""
        addr = ["-d" if direction == "out" else "-s", self.host]
        if self.port is None:
            return addr
        return [*addr, "-p", "tcp", "--dport" if direction == "out" else "--sport", str(self.port)]


class Hub:
    """An address on the host's loopback that every namespace reaches: the fault broker and the proxies listen
    on it. Labelled with this process's pid, so ``sweep_stale`` can tell a dead run's address."""

    def __init__(self) -> None:
        with _allocation_lock():
            used = _used_addresses()
            self.address = str(next(a for a in HUB_NET.hosts() if a not in used))
            label = f"lo:{PREFIX}{os.getpid()}"
            _run("ip", "addr", "add", f"{self.address}/32", "dev", "lo", "label", label)

    def close(self) -> None:
        subprocess.run(["ip", "addr", "del", f"{self.address}/32", "dev", "lo"], capture_output=True)


class Namespace:
    """A network namespace joined to the host by a veth pair; its processes reach the hub through it.

    ``wrapper`` is the command prefix that runs a program inside (``RegistryProcess(wrapper=...)``);
    ``address`` is the namespace's own address, where its servers listen and the host reaches them. One fault at
    a time per namespace: leaving a fault lifts every rule of the namespace."""

    def __init__(self) -> None:
        with _allocation_lock():
            used = _used_addresses()
            subnet = next(s for s in SUBNETS.subnets(new_prefix=30) if next(s.hosts()) not in used)
            index = (int(subnet.network_address) - int(SUBNETS.network_address)) // 4
            self.name = f"{PREFIX}-{os.getpid()}-{index}"
            self.host_if, self.inner_if = f"{PREFIX}{index}h", f"{PREFIX}{index}n"
            gateway, inner = (str(a) for a in subnet.hosts())
            self.gateway, self.address = gateway, inner
            _run("ip", "netns", "add", self.name)
            try:
                _run("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.inner_if)
                _run("ip", "link", "set", self.inner_if, "netns", self.name)
                _run("ip", "addr", "add", f"{gateway}/30", "dev", self.host_if)
                _run("ip", "link", "set", self.host_if, "up")
            except RuntimeError:
                self.close()
                raise
        inside = self.exec_prefix
        _run(*inside, "ip", "addr", "add", f"{inner}/30", "dev", self.inner_if)
        _run(*inside, "ip", "link", "set", self.inner_if, "up")
        _run(*inside, "ip", "link", "set", "lo", "up")
        _run(*inside, "ip", "route", "add", "default", "via", gateway)
        self._heal_timers: list[threading.Timer] = []

    @property
    def exec_prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.name]

    @property
    def wrapper(self) -> list[str]:
        return self.exec_prefix

    def _iptables(self, *args: str) -> None:
        _run(*self.exec_prefix, "iptables", "-w", *args)

    def heal(self) -> None:
        """Lift every fault: no filter rule, no bandwidth cap."""
        self._iptables("-F", "OUTPUT")
        self._iptables("-F", "INPUT")
        subprocess.run([*self.exec_prefix, "tc", "qdisc", "del", "dev", self.inner_if, "root"], capture_output=True)

    @contextmanager
    def _bounded(self, apply: Callable[[], None], bound: float) -> Iterator[None]:
        apply()
        timer = threading.Timer(bound, self.heal)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            self.heal()

    def _rules(self, peer: Peer, direction: str, target: list[str]) -> Callable[[], None]:
        if direction not in ("both", "out", "in"):
            raise ValueError(f"direction must be both, out or in, not {direction!r}")

        def apply() -> None:
            if direction in ("both", "out"):
                self._iptables("-A", "OUTPUT", *peer.match("out"), *target)
            if direction in ("both", "in"):
                self._iptables("-A", "INPUT", *peer.match("in"), *target)

        return apply

    def cut(self, peer: Peer, *, direction: str = "both", bound: float = 60.0) -> AbstractContextManager[None]:
        """Blackhole: packets to (``out``) and/or from (``in``) ``peer`` are dropped silently."""
        return self._bounded(self._rules(peer, direction, ["-j", "DROP"]), bound)

    def resetting(self, peer: Peer, *, bound: float = 60.0) -> AbstractContextManager[None]:
        """Every TCP packet this namespace sends to ``peer`` is answered with a reset: open connections to it
        break (ECONNRESET) and new ones are refused."""
        target = ["-j", "REJECT", "--reject-with", "tcp-reset"]
        if peer.port is None:
            target = ["-p", "tcp", *target]
        return self._bounded(self._rules(peer, "out", target), bound)

    def lossy(self, peer: Peer, probability: float, *, bound: float = 60.0) -> AbstractContextManager[None]:
        """A share ``probability`` of the packets to and from ``peer`` is dropped at random."""
        target = ["-m", "statistic", "--mode", "random", "--probability", str(probability), "-j", "DROP"]
        return self._bounded(self._rules(peer, "both", target), bound)

    def throttled(self, rate: str, *, bound: float = 60.0) -> AbstractContextManager[None]:
        """This namespace's outgoing bandwidth capped at ``rate`` (tc's notation: ``1mbit``, ``64kbit``)."""

        def apply() -> None:
            _run(*self.exec_prefix, "tc", "qdisc", "add", "dev", self.inner_if, "root", "tbf", "rate", rate,
                 "burst", "16kbit", "latency", "5s")  # fmt: skip

        return self._bounded(apply, bound)

    def open_socket(self, kind: int = socket.SOCK_STREAM) -> socket.socket:
        """A socket of this namespace, for the test process itself: made in a thread that enters the namespace
        (``setns`` moves only the calling thread) and ends right after; the socket stays in it."""
        made: list[socket.socket | BaseException] = []

        def inside() -> None:
            try:
                with open(f"/run/netns/{self.name}") as handle:
                    if _libc().setns(handle.fileno(), CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), f"setns into {self.name} failed")
                made.append(socket.socket(socket.AF_INET, kind))
            except BaseException as e:
                made.append(e)

        thread = threading.Thread(target=inside, name=f"setns-{self.name}")
        thread.start()
        thread.join()
        if isinstance(made[0], BaseException):
            raise made[0]
        return made[0]

    def connect(self, address: tuple[str, int], timeout: float = 5.0) -> socket.socket:
        """A TCP connection from inside this namespace."""
        sock = self.open_socket()
        sock.settimeout(timeout)
        try:
            sock.connect(address)
        except BaseException:
            sock.close()
            raise
        return sock

    def close(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True)  # gone with the namespace


@dataclass
class ProxyStats:
    connections: int = 0
    resets: int = 0
    bytes_up: int = 0
    bytes_down: int = 0


@dataclass
class _Mode:
    kind: str = "pass"  # pass | delay | blackhole | reset | answerless | truncate
    delay: float = 0.0
    after_bytes: int = 0
    every: int = 1


@dataclass
class TcpProxy:
    """A TCP proxy on ``listen_host`` to ``upstream``, run by an event loop in a thread of its own.

    Modes (each a bounded context manager): ``delayed(seconds)`` delays every chunk by ``seconds`` in each
    direction (order kept); ``blackholed()`` accepts and forwards nothing; ``resetting()`` resets every open
    and new connection; ``answerless(every=n)`` forwards every n-th connection's request and resets the
    client when the answer starts (the server did the work, the client never hears of it);
    ``truncating(after_bytes, every=n)`` forwards only the first bytes of a request, then resets both sides.
    """

    upstream: tuple[str, int]
    listen_host: str = "127.0.0.1"
    stats: ProxyStats = field(default_factory=ProxyStats)

    def __post_init__(self) -> None:
        self._mode = _Mode()
        self._loop = asyncio.new_event_loop()
        self._open: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True, name="tcp-proxy")
        self._thread.start()
        ready.wait(10)
        self.port: int = self._server.sockets[0].getsockname()[1]

    @property
    def address(self) -> tuple[str, int]:
        return self.listen_host, self.port

    @property
    def url(self) -> str:
        return f"http://{self.listen_host}:{self.port}"

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, self.listen_host, 0))
        ready.set()
        self._loop.run_forever()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.stats.connections += 1
        number = self.stats.connections
        mode = self._mode
        if mode.kind == "reset":
            _reset(client_w)
            return
        if mode.kind == "blackhole":
            self._open.add((client_w, client_w))
            try:
                await _drain_forever(client_r)
            except (ConnectionError, OSError):
                pass
            finally:
                self._open.discard((client_w, client_w))
                client_w.close()
            return
        try:
            up_r, up_w = await asyncio.open_connection(*self.upstream)
        except OSError:
            _reset(client_w)
            return
        pair = (client_w, up_w)
        self._open.add(pair)
        picked = number % max(mode.every, 1) == 0
        try:
            await asyncio.gather(
                self._pump(client_r, up_w, client_w, up=True, picked=picked),
                self._pump(up_r, client_w, client_w, up=False, picked=picked),
            )
        finally:
            self._open.discard(pair)
            for w in pair:
                w.close()

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client_w: asyncio.StreamWriter,
        *,
        up: bool,
        picked: bool,
    ) -> None:
        """Reads one direction and decides each chunk's fate; a sender writes the chunks at their due time
        (arrival + the delay in force), in order, so a delay adds latency without cutting throughput."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes, bool] | None] = asyncio.Queue()
        sender = asyncio.ensure_future(self._send(queue, writer, client_w, up=up))
        read = 0
        try:
            while chunk := await reader.read(65536):
                mode = self._mode
                due = loop.time() + (mode.delay if mode.kind == "delay" else 0.0)
                if mode.kind == "blackhole":
                    continue
                if mode.kind == "reset":
                    self._reset_pair(client_w, writer)
                    return
                if mode.kind == "truncate" and up and picked and read + len(chunk) > mode.after_bytes:
                    queue.put_nowait((due, chunk[: max(mode.after_bytes - read, 0)], True))
                    return
                if mode.kind == "answerless" and not up and picked:
                    queue.put_nowait((due, b"", True))
                    return
                queue.put_nowait((due, chunk, False))
                read += len(chunk)
        except (ConnectionError, OSError):
            pass
        finally:
            queue.put_nowait(None)
            await sender

    async def _send(
        self,
        queue: asyncio.Queue[tuple[float, bytes, bool] | None],
        writer: asyncio.StreamWriter,
        client_w: asyncio.StreamWriter,
        *,
        up: bool,
    ) -> None:
        loop = asyncio.get_running_loop()
        try:
            while (item := await queue.get()) is not None:
                due, chunk, then_reset = item
                if (wait := due - loop.time()) > 0:
                    await asyncio.sleep(wait)
                if chunk and not writer.is_closing():
                    writer.write(chunk)
                    await writer.drain()
                    if up:
                        self.stats.bytes_up += len(chunk)
                    else:
                        self.stats.bytes_down += len(chunk)
                if then_reset:
                    self._reset_pair(client_w, writer)
                    return
            if not writer.is_closing() and writer.can_write_eof():
                writer.write_eof()
        except (ConnectionError, OSError):
            pass

    def _reset_pair(self, client_w: asyncio.StreamWriter, other: asyncio.StreamWriter) -> None:
        self.stats.resets += 1
        _reset(client_w)
        if other is not client_w:
            _reset(other)

    def _set(self, mode: _Mode) -> None:
        self._mode = mode
        if mode.kind == "reset":
            self._loop.call_soon_threadsafe(self._reset_open)

    def _reset_open(self) -> None:
        for client_w, up_w in list(self._open):
            self._reset_pair(client_w, up_w)

    @contextmanager
    def _bounded(self, mode: _Mode, bound: float) -> Iterator[None]:
        self._set(mode)
        timer = threading.Timer(bound, self._set, args=(_Mode(),))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            self._set(_Mode())

    def delayed(self, seconds: float, *, bound: float = 120.0) -> AbstractContextManager[None]:
        return self._bounded(_Mode("delay", delay=seconds), bound)

    def blackholed(self, *, bound: float = 60.0) -> AbstractContextManager[None]:
        return self._bounded(_Mode("blackhole"), bound)

    def resetting(self, *, bound: float = 60.0) -> AbstractContextManager[None]:
        return self._bounded(_Mode("reset"), bound)

    def answerless(self, *, every: int = 1, bound: float = 60.0) -> AbstractContextManager[None]:
        return self._bounded(_Mode("answerless", every=every), bound)

    def truncating(self, after_bytes: int, *, every: int = 1, bound: float = 60.0) -> AbstractContextManager[None]:
        return self._bounded(_Mode("truncate", after_bytes=after_bytes, every=every), bound)

    def close(self) -> None:
        async def shutdown() -> None:
            self._server.close()
            self._reset_open()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if tasks:  # every connection was reset: their handlers end on their own
                await asyncio.wait(tasks, timeout=5)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), not a FIN: the peer sees ECONNRESET."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


async def _drain_forever(reader: asyncio.StreamReader) -> None:
    while await reader.read(65536):
        pass


@dataclass
class FaultBroker:
    """A tansu broker for fault tests: it listens on the hub and advertises ``proxy``'s address, so every
    Kafka client, in any namespace, reaches it through the proxy (where latency is injected)."""

    bootstrap: str
    proxy: TcpProxy
    peer: Peer  # what a namespace cuts to isolate a process from the broker


@contextmanager
def fault_broker(hub: Hub, log_path: Path) -> Iterator[FaultBroker]:
    """A tansu broker behind a ``TcpProxy`` on ``hub``, for as long as the block runs."""
    port = free_port()
    proxy = TcpProxy((hub.address, port), listen_host=hub.address)
    broker = TansuBroker(log_path, host=hub.address, port=port, advertised=f"{hub.address}:{proxy.port}")
    try:
        broker.start()
        yield FaultBroker(broker.bootstrap, proxy, Peer(hub.address, proxy.port))
    finally:
        broker.stop()
        proxy.close()


def small_disk(mountpoint: Path, size: str) -> list[str]:
    """A command prefix that runs a process with a tmpfs of ``size`` mounted on ``mountpoint``, in mount and
    user namespaces of its own (the test skips where the system does not allow them): a disk that fills up.
    What the process wrote there is gone when it exits."""
    mountpoint.mkdir(exist_ok=True)
    script = 'mount -t tmpfs -o size="$1" tmpfs "$0" && shift && exec "$@"'
    probe = subprocess.run(
        ["unshare", "-Urm", "sh", "-c", script, str(mountpoint), "64k", "true"], capture_output=True, timeout=30
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a private tmpfs here (unshare -Urm): {probe.stderr.decode().strip()}")
    return ["unshare", "-Urm", "sh", "-c", script, str(mountpoint), size]
