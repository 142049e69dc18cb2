"""The JSON results file a benchmark writes with ``--json PATH``, one shape for all of them (``charts.py`` reads it).

    {
      "benchmark": "serdes_bench",                      the script that ran
      "date": "2026-11-27T09:54:54+00:00",              when the run started (UTC)
      "machine": {"cores": 2, "load_average": {"start": 0.4, "end": 1.1}, "python": "3.11.7"},
      "parameters": {"records": 20000, "repeat": 9},    the options of the run
      "comparisons": [
        {"title": "sync serializers", "unit": "records/s", "higher_is_better": true,
         "ours": "schemakit", "peer": "confluent-kafka",
         "cases": [{"case": "avro serialize", "ours": 354874.0, "peer": 145231.0, "ratio": 2.44, ...}]}
      ],
      "figures": {"restore records/s": 97700.0}         what the run measured beside the comparisons
    }

``ratio`` says how many times better ours did: ours / peer for a rate, peer / ours for a time (lower is better),
so above 1 ours is ahead whatever the unit; it is null where the peer has no figure. A case may carry more
figures of its own (a p99, CPU seconds) next to those three.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", type=Path, metavar="PATH", help="also write the results to PATH (benchmarks/results/*.json)"
    )


@dataclass(frozen=True)
class Case:
    name: str
    ours: float
    peer: float | None
    extra: Mapping[str, float | str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Comparison:
    """One side-by-side table: ours and the peer doing the same work in the same run (one chart)."""

    title: str
    unit: str
    ours: str
    peer: str
    cases: Sequence[Case]
    higher_is_better: bool = True

    def ratio(self, case: Case) -> float | None:
        if not case.peer or not case.ours:
            return None
        return case.ours / case.peer if self.higher_is_better else case.peer / case.ours


def _load_average() -> float:
    return round(os.getloadavg()[0], 2)


class BenchRun:
    """Made when a run starts (its date and the load average then), written when it ends."""

    def __init__(self, script: str, parameters: Mapping[str, object]) -> None:
        self.benchmark = Path(script).stem
        # None is an option left out; "json" is where the file goes, not how the run went
        self.parameters = {k: v for k, v in parameters.items() if v is not None and k != "json"}
        self.date = datetime.now(UTC).replace(microsecond=0).isoformat()
        self.load_at_start = _load_average()

    def write(
        self, path: Path | None, comparisons: Sequence[Comparison], figures: Mapping[str, float] | None = None
    ) -> None:
        """Writes the results to ``path``, leaving out comparisons without cases; nothing without a path (no
        ``--json``)."""
        if path is None:
            return
        document = {
            "benchmark": self.benchmark,
            "date": self.date,
            "machine": {
                "cores": os.cpu_count(),
                "load_average": {"start": self.load_at_start, "end": _load_average()},
                "python": platform.python_version(),
            },
            "parameters": self.parameters,
            "comparisons": [
                {
                    "title": c.title,
                    "unit": c.unit,
                    "higher_is_better": c.higher_is_better,
                    "ours": c.ours,
                    "peer": c.peer,
                    "cases": [
                        {"case": case.name, "ours": case.ours, "peer": case.peer, "ratio": c.ratio(case), **case.extra}
                        for case in c.cases
                    ],
                }
                for c in comparisons
                if c.cases
            ],
            "figures": dict(figures or {}),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2, default=str) + "\n")
        print(f"results written to {path}", flush=True)
