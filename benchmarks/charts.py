"""Charts of the benchmarks' side-by-side comparisons: one PNG per comparison in every results file.

    .venv/bin/python benchmarks/charts.py [--results benchmarks/results] [--charts benchmarks/charts]
                                          [--readme benchmarks/README.md]

Reads every ``results/*.json`` (written by a benchmark run with ``--json``; ``results_file.py`` describes them),
draws each comparison as horizontal bars, ours beside the peer for every case with the ratio at its end, into
``charts/<results file>-<comparison>.png``, and deletes the PNGs there that no results file makes any more. Then it
rewrites each benchmark's chart block in the README (the lines between ``<!-- charts: NAME -->`` and
``<!-- /charts -->``) to show that benchmark's charts: the README shows a chart only once its file exists.
Needs matplotlib, the ``bench`` extra (``make charts`` installs it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

HERE = Path(__file__).resolve().parent
BLOCK = re.compile(r"(<!-- charts: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /charts -->)", re.DOTALL)
OURS_COLOR, PEER_COLOR = "#3f51b5", "#b0b0b0"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def machine_line(results: dict[str, Any]) -> str:
    machine = results["machine"]
    load = machine["load_average"]
    return f"{results['date'][:10]}, {machine['cores']} cores, load average {load['start']} -> {load['end']}"


def draw(results: dict[str, Any], comparison: dict[str, Any], path: Path) -> None:
    """Ours and the peer per case, as horizontal bars, the ratio at the end of each pair."""
    cases = comparison["cases"]
    height_in = 1.5 + 0.75 * len(cases)
    fig, ax = plt.subplots(figsize=(9, height_in))
    height = 0.38
    rows = range(len(cases))
    ours = [case["ours"] for case in cases]
    peer = [case["peer"] or 0 for case in cases]
    ax.barh([y - height / 2 for y in rows], ours, height, color=OURS_COLOR, label=comparison["ours"])
    ax.barh([y + height / 2 for y in rows], peer, height, color=PEER_COLOR, label=comparison["peer"])
    widest = max(ours + peer) or 1
    for y, case in zip(rows, cases, strict=True):
        if case["ratio"] is not None:
            end = max(case["ours"], case["peer"] or 0)
            ax.text(end + widest * 0.01, y, f"{case['ratio']:.2f}x", va="center", fontsize=9)
    ax.set_yticks(list(rows), [textwrap.fill(case["case"], 38) for case in cases], fontsize=8)
    ax.invert_yaxis()  # the first case on top, as in the tables
    ax.set_xlim(0, widest * 1.15)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if widest >= 100 else f"{v:g}"))
    better = "higher is better" if comparison["higher_is_better"] else "lower is better"
    ax.set_xlabel(f"{comparison['unit']} ({better}; the ratio says how many times better ours did)", fontsize=8)
    ax.set_title(f"{results['benchmark']}: {comparison['title']}\n{machine_line(results)}", fontsize=10)
    fig.legend(fontsize=8, loc="lower center", ncol=2, frameon=False)  # below the axes: clear of the bars' labels
    fig.tight_layout(rect=(0, 0.3 / height_in, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw_all(results_dir: Path, charts_dir: Path) -> dict[str, list[tuple[str, Path]]]:
    """Every comparison with a peer figure, drawn; returns per benchmark its charts' (alt text, file)."""
    charts: dict[str, list[tuple[str, Path]]] = defaultdict(list)
    charts_dir.mkdir(parents=True, exist_ok=True)
    for source in sorted(results_dir.glob("*.json")):
        results = json.loads(source.read_text())
        for comparison in results["comparisons"]:
            if not any(case["peer"] for case in comparison["cases"]):
                continue
            path = charts_dir / f"{source.stem}-{slug(comparison['title'])}.png"
            draw(results, comparison, path)
            alt = f"{results['benchmark']}: {comparison['title']}, {comparison['ours']} vs {comparison['peer']}"
            charts[results["benchmark"]].append((f"{alt} ({machine_line(results)})", path))
            print(f"{source.name}: {path}")
    drawn = {path for pairs in charts.values() for _, path in pairs}
    for stale in set(charts_dir.glob("*.png")) - drawn:
        stale.unlink()
        print(f"removed {stale} (no results file makes it)")
    return charts


def show_in_readme(readme: Path, charts: dict[str, list[tuple[str, Path]]]) -> None:
    """Rewrites every chart block of ``readme`` with the image lines of its benchmark's charts."""

    def block(match: re.Match[str]) -> str:
        images = [
            f"![{alt}]({Path(os.path.relpath(path, readme.parent)).as_posix()})"
            for alt, path in charts.get(match["name"], [])
        ]
        body = "\n" + "\n\n".join(images) + "\n\n" if images else ""  # each image a paragraph of its own
        return match[1] + body + match[4]

    text = readme.read_text()
    named = {m["name"] for m in BLOCK.finditer(text)}
    for benchmark in sorted(set(charts) - named):
        print(f"{readme} has no '<!-- charts: {benchmark} -->' block: its charts are not shown")
    readme.write_text(BLOCK.sub(block, text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=HERE / "results")
    parser.add_argument("--charts", type=Path, default=HERE / "charts")
    parser.add_argument("--readme", type=Path, default=HERE / "README.md")
    args = parser.parse_args()
    show_in_readme(args.readme, draw_all(args.results, args.charts))


if __name__ == "__main__":
    main()
