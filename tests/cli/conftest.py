"""Fixtures for the command line's tests (``tests/support/cli.py``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.cli import Result, run_in_process


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Result]:
    """``schemakit ARGS`` in this process; returns exit status and what it printed."""
    return lambda *args: run_in_process(capsys, *args)
