"""A registry for a benchmark: ``python -m registry serve`` on a SQLite log and a free port (``start_registry``),
or a throwaway one in a temporary folder (``own_registry``); ``wait_http`` waits for any server a bench starts."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.ports import free_port  # noqa: E402


def wait_http(url: str, proc: subprocess.Popen[Any], timeout: float = 30) -> None:
    """Until ``url`` answers anything but 503 (the registry answers 503 until its startup replay is done)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code != 503:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{url} did not answer")


def start_registry(data: Path, extra_args: Sequence[str] = (), **popen: Any) -> tuple[subprocess.Popen[bytes], str]:
    """The registry on the SQLite log ``data`` and a free port, with ``extra_args`` for ``serve`` and ``popen`` for
    its process (where its output goes); returns the process and its URL once it is ready."""
    port = free_port()
    command = ["-m", "registry", "serve", "--log", f"sqlite:///{data}", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen([sys.executable, *command, *extra_args], cwd=ROOT, **popen)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url + "/health/ready", proc)
    except BaseException:
        proc.kill()
        raise
    return proc, url


@contextmanager
def own_registry() -> Iterator[str]:
    """Start the registry, yield its URL, stop it (its log goes to ``server.log`` in the temp dir)."""
    with tempfile.TemporaryDirectory() as d, open(Path(d) / "server.log", "wb") as log:
        proc, url = start_registry(Path(d) / "data", stdout=log, stderr=subprocess.STDOUT)
        try:
            yield url
        finally:
            proc.terminate()
            proc.wait(10)
