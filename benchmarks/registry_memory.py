"""Resident memory of a registry process holding many schemas, empty and after every answer was rendered once.

    .venv/bin/python benchmarks/registry_memory.py [--schemas 10000] [--json PATH]

1. Starts the registry (``own_registry.py``: ``schemakit serve`` on a SQLite log in a temp dir) and reads its RSS
   once it serves (empty: the imports and the app).
2. Registers ``--schemas`` Avro schemas over ``--schemas``/10 subjects, each subject a chain of versions with one
   more field each (``registry_bench.register_many``, the schemas the read benchmark serves).
3. GETs every id and every subject's latest version, so the bodies the registry pre-renders exist (and the read
   cache holds those answers), and reads the RSS again.

The targets (issue 31): at most 120 MiB with 10,000 schemas and 600 MiB with 100,000. Registering is one request
at a time (what a long-lived registry has seen, one record at a time), so 100,000 takes some minutes.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import httpx
from registry_bench import register_many, rss_kib, start_registry
from results_file import BenchRun, add_json_option


def touch_every_answer(url: str, subjects: list[str], max_id: int) -> None:
    """GET every id and every subject's latest version once (what a consumer fleet's first reads do)."""
    with httpx.Client(base_url=url, timeout=60) as c:
        for i in range(1, max_id + 1):
            c.get(f"/schemas/ids/{i}").raise_for_status()
        for s in subjects:
            c.get(f"/subjects/{s}/versions/latest").raise_for_status()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--schemas", type=int, default=10_000, help="Avro schemas to register (over N/10 subjects)")
    add_json_option(ap)
    args = ap.parse_args()
    run = BenchRun(__file__, vars(args))
    subjects = max(1, args.schemas // 10)

    tmp = Path(tempfile.mkdtemp(prefix="registry-memory-"))
    proc = None
    try:
        proc, url = start_registry(tmp / "data", [])
        empty = rss_kib(proc.pid)
        print(f"RSS empty: {empty / 1024:.1f} MiB; registering {args.schemas} schemas ...", flush=True)
        started = time.monotonic()
        pairs = register_many(url, args.schemas, subjects, "memory", {})
        registered = time.monotonic() - started
        after_register = rss_kib(proc.pid)
        names = sorted({s for s, _ in pairs})
        max_id = httpx.get(f"{url}/schemas/ids/1", params={"fetchMaxId": "true"}).json()["maxId"]
        touch_every_answer(url, names, max_id)
        full = rss_kib(proc.pid)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)

    print()
    print(f"| schemas | subjects | RSS empty | after registering ({registered:.0f} s) | after reading every answer |")
    print("|---:|---:|---:|---:|---:|")
    print(
        f"| {args.schemas:,} | {len(names):,} | {empty / 1024:.0f} MiB | {after_register / 1024:.0f} MiB | "
        f"{full / 1024:.0f} MiB |"
    )
    per_schema = (full - empty) * 1024 / args.schemas
    print(f"about {per_schema / 1024:.1f} KiB per schema above the empty process")
    run.write(
        args.json,
        [],
        {
            "RSS MiB empty": empty / 1024,
            f"RSS MiB after registering {args.schemas} schemas": after_register / 1024,
            f"RSS MiB with {args.schemas} schemas read": full / 1024,
            "KiB per schema": per_schema / 1024,
            "seconds registering": registered,
        },
    )


if __name__ == "__main__":
    main()
