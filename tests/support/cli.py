"""Running the ``schemakit`` command line: as a real process (exit codes, the console script) or in-process
through ``schemakit.cli.main`` (many cheap calls). ``tests/cli/conftest.py`` makes the latter the ``cli``
fixture."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from schemakit.cli import main
from tests.support import REPO_ROOT


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_process(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Result:
    """``python -m schemakit ARGS`` in a child process (its stderr is not a terminal: no progress line)."""
    proc = subprocess.run(
        [sys.executable, "-m", "schemakit", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd or REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})},
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def run_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    """``schemakit ARGS`` in this process; returns exit status and what it printed."""
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as e:  # argparse's usage errors
        code = int(e.code or 0)
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)
