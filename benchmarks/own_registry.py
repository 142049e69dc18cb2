"""A throwaway registry for a benchmark: ``python -m registry serve`` on a temp SQLite log and a free port."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def own_registry() -> Iterator[str]:
    """Start the registry, yield its URL, stop it (its log goes to ``server.log`` in the temp dir)."""
    with tempfile.TemporaryDirectory() as d:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        log = open(Path(d) / "server.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "registry",
                "serve",
                "--log",
                f"sqlite:///{d}/data",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if httpx.get(url + "/", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            else:
                raise RuntimeError("registry did not start")
            yield url
        finally:
            proc.terminate()
            proc.wait(10)
            log.close()
