"""``StreamsApp(gc_tuning=...)``: while an app runs, full garbage collections are rarer (unless the application
chose its own thresholds) and, with a query server, the objects alive at its start are frozen; closing puts
the thresholds back and thaws only what nothing else froze. ``gc_tuning=False`` changes nothing."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streams import StreamsApp
from streams.gc_tuning import STREAMS_THRESHOLDS, GcTuning
from streams.log import open_log
from tests.streams.topologies import key_counts
from tests.support.ports import free_port
from tests.support.topics import create_topics

DEFAULTS = (700, 10, 10)


@pytest.fixture(autouse=True)
def collector_as_found() -> Iterator[None]:
    """Each test starts with nothing frozen and leaves the thresholds and the frozen objects as it found them
    (the test owns the process's collector)."""
    saved = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*saved)


@pytest.fixture
def tuning() -> Iterator[Callable[..., GcTuning]]:
    """``GcTuning``s that are released at the end even when the test fails, so none holds on into the next."""
    made: list[GcTuning] = []

    def make(enabled: bool = True) -> GcTuning:
        made.append(GcTuning(enabled))
        return made[-1]

    yield make
    for t in made:
        t.release()


def _frozen(obj: object) -> bool:
    """Frozen objects are in none of the collector's generations (``gc.get_objects`` lists those)."""
    assert gc.is_tracked(obj)
    return not any(o is obj for o in gc.get_objects())


def _user_freezes() -> list[list[Any]]:
    """What a user's own ``gc.freeze()`` would freeze: returns an object it froze."""
    marker: list[list[Any]] = [[]]
    gc.freeze()
    assert _frozen(marker)
    return marker


# -- the thresholds --------------------------------------------------------------------------------------


def test_the_interpreter_defaults_are_relaxed_until_the_last_app_releases(tuning: Callable[..., GcTuning]) -> None:
    gc.set_threshold(*DEFAULTS)
    first, second = tuning(), tuning()
    assert first.relax_full_collections() is True
    assert gc.get_threshold() == STREAMS_THRESHOLDS == (700, 10, 1000)
    assert first.relax_full_collections() is False  # already set: nothing to do
    assert second.relax_full_collections() is False
    first.release()
    assert gc.get_threshold() == STREAMS_THRESHOLDS  # the second app still runs
    second.release()
    assert gc.get_threshold() == DEFAULTS
    second.release()  # again: nothing left to undo
    assert gc.get_threshold() == DEFAULTS


def test_thresholds_the_application_chose_are_kept(tuning: Callable[..., GcTuning]) -> None:
    gc.set_threshold(5000, 20, 20)
    one = tuning()
    assert one.relax_full_collections() is False
    assert gc.get_threshold() == (5000, 20, 20)
    one.release()
    assert gc.get_threshold() == (5000, 20, 20)


def test_thresholds_changed_while_the_app_ran_are_not_put_back(tuning: Callable[..., GcTuning]) -> None:
    gc.set_threshold(*DEFAULTS)
    one = tuning()
    assert one.relax_full_collections() is True
    gc.set_threshold(2000, 10, 10)
    one.release()
    assert gc.get_threshold() == (2000, 10, 10)


# -- freezing --------------------------------------------------------------------------------------------


def test_what_it_froze_is_thawed_when_the_last_app_releases(tuning: Callable[..., GcTuning]) -> None:
    first, second = tuning(), tuning()
    marker: list[list[Any]] = [[]]
    assert first.freeze_long_lived() > 0
    assert _frozen(marker)
    second.freeze_long_lived()
    first.release()
    assert _frozen(marker)  # the second app still runs
    second.release()
    assert not _frozen(marker) and gc.get_freeze_count() == 0


def test_objects_frozen_before_are_never_thawed(tuning: Callable[..., GcTuning]) -> None:
    marker = _user_freezes()
    one = tuning()
    one.freeze_long_lived()
    one.release()
    assert _frozen(marker)


def test_objects_frozen_meanwhile_are_never_thawed(tuning: Callable[..., GcTuning]) -> None:
    one = tuning()
    one.freeze_long_lived()
    marker = _user_freezes()
    one.release()
    assert _frozen(marker)


def test_objects_frozen_meanwhile_stay_frozen_when_more_of_ours_died(tuning: Callable[..., GcTuning]) -> None:
    """Frozen objects that die leave the freeze count: it falls below its value after our freeze although the
    user froze more since, which must not pass for "nothing else froze"."""
    ours_that_die = [[] for _ in range(10_000)]
    one = tuning()
    one.freeze_long_lived()
    marker = _user_freezes()
    count_with_the_users = gc.get_freeze_count()
    del ours_that_die
    assert gc.get_freeze_count() < count_with_the_users - 5_000
    one.release()
    assert _frozen(marker)


def test_objects_frozen_between_two_apps_freezing_are_never_thawed(tuning: Callable[..., GcTuning]) -> None:
    first, second = tuning(), tuning()
    first.freeze_long_lived()
    marker = _user_freezes()
    second.freeze_long_lived()
    first.release()
    second.release()
    assert _frozen(marker)


def test_a_disabled_tuning_changes_nothing(tuning: Callable[..., GcTuning]) -> None:
    gc.set_threshold(*DEFAULTS)
    disabled = tuning(enabled=False)
    assert disabled.relax_full_collections() is False
    assert disabled.freeze_long_lived() == 0
    assert gc.get_threshold() == DEFAULTS and gc.get_freeze_count() == 0
    disabled.release()
    assert gc.get_threshold() == DEFAULTS and gc.get_freeze_count() == 0


# -- through StreamsApp, with a query server ---------------------------------------------------------------


@pytest.fixture
def app(tmp_path: Path, names: Callable[[str], str]) -> Callable[..., StreamsApp]:
    url = f"sqlite:///{tmp_path / 'log'}"
    src, out = names("in"), names("out")
    with open_log(url) as lg:
        create_topics(lg, 1, src, out)

    def make(**options: Any) -> StreamsApp:
        return StreamsApp(
            key_counts(src, out),
            names("gc"),
            url,
            state_dir=tmp_path / "state",
            default_store="memory",
            application_server=f"http://127.0.0.1:{free_port()}",
            **options,
        )

    return make


def test_an_app_tunes_the_collector_while_it_runs_and_undoes_it_at_close(app: Callable[..., StreamsApp]) -> None:
    gc.set_threshold(*DEFAULTS)
    with app():
        assert gc.get_threshold() == STREAMS_THRESHOLDS
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == DEFAULTS
    assert gc.get_freeze_count() == 0


def test_an_app_never_thaws_what_the_user_froze(app: Callable[..., StreamsApp]) -> None:
    marker = _user_freezes()
    with app():
        pass
    assert _frozen(marker)


def test_gc_tuning_off_leaves_the_collector_alone(app: Callable[..., StreamsApp]) -> None:
    gc.set_threshold(*DEFAULTS)
    with app(gc_tuning=False):
        assert gc.get_threshold() == DEFAULTS
        assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == DEFAULTS


def test_gc_tuning_must_be_a_bool(app: Callable[..., StreamsApp]) -> None:
    with pytest.raises(ValueError, match="gc_tuning must be True or False, got 'no'"):
        app(gc_tuning="no")
