"""Streams instances as subprocesses (``tests/streams/app_runner.py``), for the multi-instance tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from tests.support import REPO_ROOT


def holds_sqlite_write_lock(pid: int, folder: Path) -> bool:
    """Whether ``pid`` holds an exclusive lock of a SQLite WAL index (``*-shm``) below ``folder``: SQLite's write
    lock (byte 120), or a checkpoint or recovery lock, as ``/proc/locks`` lists them
    (``N: POSIX  ADVISORY  WRITE <pid> <major>:<minor>:<inode> <start> <end>``)."""
    inodes = {path.stat().st_ino for path in folder.rglob("*-shm")}
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields or len(fields) < 8:  # "->": a process waiting for the lock, not holding it
            continue
        if fields[3] == "WRITE" and fields[4] == str(pid) and int(fields[5].rsplit(":", 1)[1]) in inodes:
            return True
    return False


class Instance:
    """One ``app_runner`` subprocess: its metrics lines and its task state events, as printed."""

    # the instances the running test started: a failed test's report shows the end of their logs
    started: ClassVar[list[Instance]] = []

    def __init__(self, name: str, args: list[str], log_dir: Path, wrapper: list[str] | None = None) -> None:
        """``wrapper``: a command the instance runs under (it execs the rest), e.g. in a network namespace."""
        Instance.started.append(self)
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

    def log_tail(self, lines: int = 150) -> str:
        """The last ``lines`` lines of the instance's log (stderr)."""
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError as exc:
            return f"(no log: {exc})"
        return "\n".join(text.splitlines()[-lines:])

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

    def pause(self, log_url: str) -> None:
        """SIGSTOP, as a long GC pause or a frozen VM would stop it. On a SQLite log, at a moment the process holds
        none of the log's write locks: a process stopped inside a write transaction holds up every other writer
        until it continues, so the others could not take its tasks over (what the pause is meant to show); it is
        continued and stopped again, a moment later, until it holds none."""
        folder = Path(log_url.removeprefix("sqlite:///")) if log_url.startswith("sqlite:///") else None
        for _ in range(500):
            self.proc.send_signal(signal.SIGSTOP)
            if folder is None or not holds_sqlite_write_lock(self.proc.pid, folder):
                return
            self.proc.send_signal(signal.SIGCONT)
            time.sleep(0.005)
        raise AssertionError(f"instance {self.name} held the SQLite log's write lock at every attempt to pause it")

    def stop(self) -> int:
        """SIGTERM, then its exit code. Within 60 s: a graceful close may wait out one call to the log (30 s on
        Kafka), e.g. a commit to a broker that has just come back."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGUSR1)  # app_runner writes every thread's stack to its log
                time.sleep(1)
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
