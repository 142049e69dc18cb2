"""Starts one streams instance whose topology holds a global table, in a process of its own so that its memory
is measured alone; prints one JSON line once ``start()`` returned (the global table read up to its end), then
closes the app and exits 0:

    python -m tests.streams.global_table_runner <log-url> <application-id> <state-dir> <global-topic> <kind> [<server>]

``{"restored": records read from the global topic at this start, "entries": the store's entries,
"rss_growth_kb": resident memory after the start minus before it, "sample": the value of key k0000000}``.
With ``<server>`` (an ``application_server``) it serves queries and runs until killed instead of closing.
The topology also reads ``<global-topic>-orders`` (which must exist) and joins it with the table, as an
application would.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from streams import StreamsApp, StreamsBuilder


def rss_kb() -> int:
    """This process's resident set size (``VmRSS``), in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> int:
    url, app_id, state_dir, topic, kind = sys.argv[1:6]
    server = sys.argv[6] if len(sys.argv) > 6 else None
    b = StreamsBuilder()
    table = b.global_table(topic, key=str, value=str, store="rows", kind=kind)
    b.stream(f"{topic}-orders", key=str, value=str).join(table, lambda k, v: v, lambda v, row: row).to(
        f"{topic}-out", key=str, value=str
    )
    app = StreamsApp(
        b.build(), app_id, url, state_dir=Path(state_dir), commit_interval_ms=200, application_server=server
    )
    before = rss_kb()
    app.start()
    try:
        grown = rss_kb() - before
        glob = app.metrics()["global"]
        sample = app.store("rows").get("k0000000")
        figures = {"restored": glob["restored"], "entries": glob["stores"]["rows"], "rss_growth_kb": grown}
        print(json.dumps({**figures, "sample": sample}), flush=True)
        if server is not None:
            threading.Event().wait()  # until killed
    finally:
        app.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
