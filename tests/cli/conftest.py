"""Fixtures for the command line's tests (``tests/support/cli.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import Result, run_in_process


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """``schemakit ARGS`` in this process; returns exit status and what it printed."""
    return lambda *args: run_in_process(capsys, *args)


@pytest.fixture(params=[pytest.param("sqlite"), pytest.param("kafka", marks=pytest.mark.kafka)])
def log_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The ``topic`` commands' ``--log``: a SQLite log of this test's own, then the test broker (or Kafka)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/log"
    return str(request.getfixturevalue("kafka_log_url"))
