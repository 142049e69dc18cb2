"""Starting an application makes full garbage collections rarer, unless the application chose its own
thresholds."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from streams.gc_policy import STREAMS_THRESHOLDS, relax_full_collections


@pytest.fixture(autouse=True)
def restore_thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def test_the_interpreter_defaults_are_relaxed() -> None:
    gc.set_threshold(700, 10, 10)
    assert relax_full_collections() is True
    assert gc.get_threshold() == STREAMS_THRESHOLDS == (700, 10, 1000)
    assert relax_full_collections() is False  # already set: nothing to do


def test_thresholds_the_application_chose_are_kept() -> None:
    gc.set_threshold(5000, 20, 20)
    assert relax_full_collections() is False
    assert gc.get_threshold() == (5000, 20, 20)
