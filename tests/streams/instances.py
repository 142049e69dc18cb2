"""Streams instances as subprocesses (``tests/streams/app_runner.py``), for the multi-instance tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.support import REPO_ROOT


class Instance:
    """One ``app_runner`` subprocess: its metrics lines and its task state events, as printed."""

    def __init__(self, name: str, args: list[str], log_dir: Path, wrapper: list[str] | None = None) -> None:
        """``wrapper``: a command the instance runs under (it execs the rest), e.g. in a network namespace."""
        self.name = name
        self.lines: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.stderr_path = log_dir / f"{name}.log"
        self.stderr = open(self.stderr_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [*(wrapper or []), sys.executable, "-m", "tests.streams.app_runner", *args],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            item = json.loads(line)
            (self.events if item.get("event") == "task" else self.lines).append(item)

    @property
    def latest(self) -> dict[str, Any]:
        return self.lines[-1] if self.lines else {}

    def tasks(self) -> list[str]:
        return self.latest.get("tasks", [])

    def states(self) -> dict[str, str]:
        """Task id -> state, from the newest metrics."""
        return {t: s["state"] for t, s in self.latest.get("task_states", {}).items()}

    def history(self, task: str) -> list[str]:
        """The states ``task`` went through here, in order."""
        return [e["new"] for e in list(self.events) if e["task"] == task]

    def kill(self) -> None:
        """SIGKILL: no commit, no leaving the group, no checkpoint."""
        self.proc.kill()
        self.proc.wait()

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._reader.join(timeout=5)
            self.stderr.close()
        return code

    def ensure_dead(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()
