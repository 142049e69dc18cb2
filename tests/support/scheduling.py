"""How ``make test`` spreads the suite over its xdist workers (``-n 3 --dist loadfile``).

xdist hands out whole files, the files with the most tests first. The files that take longest (end-to-end
tests with brokers, registry clusters, killed processes, a fresh venv) have few tests, so they came last,
and one worker ran them while the other had nothing left. Here each run records how long each unit of work
took per test (in pytest's cache, ``.pytest_cache``), and the next run hands out the longest units first,
so the run ends with short units that the workers share out evenly. A unit is estimated at its
recorded seconds per test times its number of tests now (a run of part of a file, with ``-k`` or ``-m``,
records that part); one never timed counts ``UNTIMED_TEST_SECONDS`` per test; with no record at all the
order is xdist's.

``tests/spark`` is one unit rather than one per file: each worker that runs a Spark test starts a Spark
session of its own (a JVM of ~0.75 GB that takes tens of seconds to start and warm up on a loaded machine),
so the directory goes to one worker. So do the network fault tests and the soak, one after another: side by
side, their latencies and partitions competed for the machine (a fresh-clone run at a load of 47 timed out
writes of the 500 ms latency test while the streams latency test and the soak ran beside it).

A fresh clone has no record of its own: ``unit_times.json`` beside this module, a full run's record, stands in
for every unit the cache has not timed (``recorded_times``), so the first run (CI's) hands out the long units
first too, instead of by their number of tests, which sent the one-test soak last.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from xdist.remote import Producer
from xdist.scheduler import LoadFileScheduling

#: units of more than one file (each runs on one worker), by name: the path prefixes of their files; and why:
#: see the module docstring
ONE_UNITS = {
    "tests/spark/": ("tests/spark/",),
    "network faults": (
        "tests/ha/test_network_faults.py",
        "tests/streams/test_network_faults.py",
        "tests/ha/test_soak.py",
    ),
}
#: a full run's {unit: [seconds, tests]}, for the units a cache has no record of
BASELINE = Path(__file__).with_name("unit_times.json")
#: pytest cache key of {unit: [seconds, tests]} from the runs so far (each unit's latest run)
CACHE_KEY = "schemakit/unit-times"
#: the estimate for a test of a unit with no recorded time (about the suite's median)
UNTIMED_TEST_SECONDS = 0.25


def unit_of(nodeid: str) -> str:
    """The unit of work ``nodeid`` belongs to: its file, or its directory if that is run as one unit."""
    path = nodeid.split("::", 1)[0]
    return next((unit for unit, prefixes in ONE_UNITS.items() if path.startswith(prefixes)), path)


def recorded_times(cache: pytest.Cache) -> dict[str, list[float]]:
    """{unit: [seconds, tests]}: the cache's record of the last runs over the committed baseline."""
    baseline: dict[str, list[float]] = json.loads(BASELINE.read_text())
    return {**baseline, **cache.get(CACHE_KEY, {})}


def order_longest_first(items: list[pytest.Item], times: dict[str, list[float]]) -> None:
    """Reorder ``items`` (in place) unit by unit, the longest first, by ``times`` ({unit: [seconds, tests]}
    recorded) or ``UNTIMED_TEST_SECONDS`` per test. The tests of a unit keep their order, and so do units
    that tie."""
    count = Counter(unit_of(item.nodeid) for item in items)
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        first.setdefault(unit_of(item.nodeid), i)

    def per_test(unit: str) -> float:
        seconds, tests = times.get(unit, (0.0, 0))
        return seconds / tests if tests else UNTIMED_TEST_SECONDS

    def rank(item: pytest.Item) -> tuple[float, int]:
        unit = unit_of(item.nodeid)
        return (-per_test(unit) * count[unit], first[unit])

    items.sort(key=rank)


class UnitTimer:
    """Adds up the durations (setup, call, teardown) of the tests reported, and counts the tests, per unit;
    ``save`` merges them into the cache for the next run's order."""

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.tests: defaultdict[str, set[str]] = defaultdict(set)

    def add(self, report: pytest.TestReport) -> None:
        unit = unit_of(report.nodeid)
        self.seconds[unit] += report.duration
        self.tests[unit].add(report.nodeid)

    def save(self, cache: pytest.Cache) -> None:
        if self.seconds:
            timed = {unit: [round(s, 2), len(self.tests[unit])] for unit, s in self.seconds.items()}
            cache.set(CACHE_KEY, {**cache.get(CACHE_KEY, {}), **timed})


class LongestFirstFileScheduling(LoadFileScheduling):
    """``--dist loadfile`` that hands out units in the collection's order (``order_longest_first``) instead
    of by their number of tests, and runs each of ``ONE_UNITS`` as one unit."""

    def __init__(self, config: pytest.Config, log: Producer | None = None) -> None:
        super().__init__(config, log)
        config.option.loadscopereorder = False

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)
