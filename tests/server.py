"""A real registry server for tests: ``schemakit serve`` in a child process on a free port.

Fixtures:
- ``registry_url`` (session): one server on a fresh SQLite log, shared by tests that use unique subjects.
- ``module_registry`` (module): a server of the test module's own, for tests that need an empty registry.
- ``schema_types`` / ``require_type``: what ``GET /schemas/types`` lists, and a probe that skips a test without it.
- ``start_registry`` (function): a factory ``start_registry(log_url=None, *args, env=, scheme=, probe=) ->
  RegistryProcess`` for tests that need their own server (restart tests, several instances, TLS and
  authentication: ``scheme="https"``, ``probe`` the httpx options of the readiness check); every process
  started is stopped at teardown.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RegistryProcess:
    log_url: str
    port: int
    log_file: Path
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    #: a command the server runs under (it must exec the rest of its arguments), e.g. in a namespace
    wrapper: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None
    #: ``https`` for a server started with ``--tls-cert``
    scheme: str = "http"
    #: httpx options of the readiness probe (``verify``, ``cert``, ``auth`` for a secured server)
    probe: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> RegistryProcess:
        cmd = [
            *self.wrapper,
            sys.executable,
            "-m",
            "registry",
            "serve",
            "--log",
            self.log_url,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *self.extra_args,
        ]
        out = self.log_file.open("ab")
        self.proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **self.env}, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"registry exited with {self.proc.returncode}:\n{self.log_file.read_text()}")
            try:
                if httpx.get(self.url + "/", timeout=1.0, **self.probe).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"registry did not answer within {timeout}s:\n{self.log_file.read_text()}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def restart(self) -> RegistryProcess:
        self.stop()
        return self.start()


@pytest.fixture
def start_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    started: list[RegistryProcess] = []

    def start(
        log_url: str | None = None,
        *extra_args: str,
        port: int | None = None,
        env: dict[str, str] | None = None,
        wrapper: list[str] | None = None,
        scheme: str = "http",
        probe: dict[str, Any] | None = None,
    ) -> RegistryProcess:
        d = tmp_path_factory.mktemp("registry")
        rp = RegistryProcess(
            log_url or f"sqlite:///{d / 'data'}",
            port or free_port(),
            d / "server.log",
            list(extra_args),
            env or {},
            wrapper or [],
            scheme=scheme,
            probe=probe or {},
        )
        started.append(rp)
        return rp.start()

    yield start
    for rp in started:
        rp.kill()


@pytest.fixture(scope="session")
def registry_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    d = tmp_path_factory.mktemp("shared-registry")
    rp = RegistryProcess(f"sqlite:///{d / 'data'}", free_port(), d / "server.log").start()
    yield rp.url
    rp.stop()


@pytest.fixture(scope="module")
def module_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryProcess]:
    """A registry of the test module's own: its state starts empty, and it stops after the module."""
    d = tmp_path_factory.mktemp("module-registry")
    rp = RegistryProcess(f"sqlite:///{d / 'data'}", free_port(), d / "server.log").start()
    yield rp
    rp.stop()


@pytest.fixture(scope="session")
def schema_types(registry_url: str) -> list[str]:
    resp = httpx.get(registry_url + "/schemas/types", timeout=10)
    return resp.json() if resp.status_code == 200 else ["AVRO"]


@pytest.fixture
def require_type(schema_types: list[str]) -> Callable[[str], None]:
    """Capability probe: skip when the registry does not list the schema type under /schemas/types."""

    def require(kind: str) -> None:
        if kind not in schema_types:
            pytest.skip(f"registry does not support {kind} yet (GET /schemas/types = {schema_types})")

    return require
