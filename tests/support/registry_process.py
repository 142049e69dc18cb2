"""A real registry server for tests: ``python -m registry serve`` in a child process on a free port.

``tests/conftest.py`` builds its fixtures from these: ``registry_url`` (one server for the session),
``module_registry`` (one per test module) and ``start_registry`` (a ``RegistryStarter`` per test).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.ports import free_port
from tests.support.waiting import wait_for


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
    #: the address it listens on and is reached at (a network namespace's own address in the fault tests)
    host: str = "127.0.0.1"

    @classmethod
    def on_sqlite(cls, directory: Path) -> RegistryProcess:
        """A server on a fresh SQLite log in ``directory`` (its output in ``server.log`` there)."""
        return cls(f"sqlite:///{directory / 'data'}", free_port(), directory / "server.log")

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> RegistryProcess:
        """Start the server and return once it answers."""
        return self.spawn().wait_ready(timeout)

    def spawn(self) -> RegistryProcess:
        """Start the server without waiting for it (``wait_ready`` does): several start side by side."""
        cmd = [
            *self.wrapper,
            sys.executable,
            "-m",
            "registry",
            "serve",
            "--log",
            self.log_url,
            "--host",
            self.host,
            "--port",
            str(self.port),
            *self.extra_args,
        ]
        out = self.log_file.open("ab")
        self.proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **self.env}, start_new_session=True
        )
        return self

    def wait_ready(self, timeout: float = 30.0) -> RegistryProcess:
        """Block until the server answers ``GET /`` (it is stopped, and this raises, if it does not)."""
        try:
            wait_for(self._answers, timeout, what=f"the registry at {self.url} to answer", ignoring=(httpx.HTTPError,))
        except AssertionError as exc:
            self.stop()
            raise RuntimeError(f"{exc}:\n{self.log_file.read_text()}") from None
        return self

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"registry exited with {self.proc.returncode}:\n{self.log_file.read_text()}")
        return httpx.get(self.url + "/", timeout=1.0, **self.probe).status_code == 200

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


class RegistryStarter:
    """``start(log_url=None, *extra_args, port=, env=, wrapper=, scheme=, probe=, host=, wait=True)``: a started
    server, on a fresh SQLite log unless ``log_url`` is given (with ``wait=False``, spawned only: call its
    ``wait_ready()``); ``kill_all()`` stops every server it started."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._tmp = tmp_path_factory
        self.started: list[RegistryProcess] = []

    def __call__(
        self,
        log_url: str | None = None,
        *extra_args: str,
        port: int | None = None,
        env: dict[str, str] | None = None,
        wrapper: list[str] | None = None,
        scheme: str = "http",
        probe: dict[str, Any] | None = None,
        host: str = "127.0.0.1",
        wait: bool = True,
    ) -> RegistryProcess:
        d = self._tmp.mktemp("registry")
        rp = RegistryProcess(
            log_url or f"sqlite:///{d / 'data'}",
            port or free_port(),
            d / "server.log",
            list(extra_args),
            env or {},
            wrapper or [],
            scheme=scheme,
            probe=probe or {},
            host=host,
        )
        self.started.append(rp)
        rp.spawn()
        return rp.wait_ready() if wait else rp

    def kill_all(self) -> None:
        for rp in self.started:
            rp.kill()


def schema_types(url: str) -> list[str]:
    """What ``GET /schemas/types`` lists (``["AVRO"]`` from a registry that does not answer it)."""
    resp = httpx.get(url + "/schemas/types", timeout=10)
    return resp.json() if resp.status_code == 200 else ["AVRO"]
