"""Runs one streams instance as a subprocess for the multi-instance tests; prints its metrics as JSON
lines on stdout whenever they change, and exits 0 after a graceful SIGTERM shutdown.

    python -m tests.streams.app_runner <log-url> <application-id> <state-dir> <in-topic> <out-topic>
        [<commit-interval-ms>] [<topology: order_totals | click_windows | click_windows_uncached>]
"""

from __future__ import annotations

import json
import logging
import sys
import threading

from streams.app import StreamsApp
from tests.streams.topologies import click_windows, order_totals

TOPOLOGIES = {
    "order_totals": order_totals,
    "click_windows": click_windows,
    "click_windows_uncached": lambda clicks, finals: click_windows(clicks, finals, cache=False),
}


def main() -> int:
    url, app_id, state_dir, orders, out = sys.argv[1:6]
    commit_ms = int(sys.argv[6]) if len(sys.argv) > 6 else 300
    topology = TOPOLOGIES[sys.argv[7] if len(sys.argv) > 7 else "order_totals"]
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(process)d %(threadName)s %(name)s %(message)s")  # fmt: skip
    app = StreamsApp(topology(orders, out), app_id, url, state_dir=state_dir, commit_interval_ms=commit_ms)
    done = threading.Event()

    def report() -> None:
        last = None
        while not done.wait(0.1):
            m = app.metrics()
            snapshot = {k: m[k] for k in ("state", "tasks", "restored", "restores", "processed")}
            if snapshot != last:
                print(json.dumps(snapshot), flush=True)
                last = snapshot

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    try:
        app.run()
    finally:
        done.set()
        reporter.join()
    print(json.dumps({"state": app.state, "exit": True}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
