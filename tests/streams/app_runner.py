"""Runs one streams instance as a subprocess for the multi-instance tests; prints JSON lines on stdout: its
metrics whenever they change, and every task state change (``{"event": "task", ...}``); exits 0 after a
graceful SIGTERM shutdown.

    python -m tests.streams.app_runner <log-url> <application-id> <state-dir> <input-topic> <output-topic>
        [--commit-ms N] [--topology order_totals|key_counts|click_windows|click_windows_uncached]
        [--name NAME] [--standbys N] [--session-ms N] [--probing-ms N] [--recovery-lag N] [--warmups N]
        [--server http://host:port] [--guarantee at_least_once|exactly_once_v2]
        [--topology versioned_enrichment --table PRICES-TOPIC]
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import signal
import sys
import threading
import time

from streams.app import StreamsApp
from tests.streams.topologies import click_windows, key_counts, order_totals, versioned_enrichment

REPORTED = (
    "state",
    "tasks",
    "standby_tasks",
    "task_states",
    "restored",
    "restores",
    "processed",
    "leader",
    "generation",
    "lost_tasks",
    "standby_records",
)


class Events:
    """A ``StateListener`` that prints every task state change."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock

    def on_state_change(self, old: str, new: str) -> None:
        pass

    def on_task_state_change(self, task_id: str, old: str, new: str) -> None:
        with self._lock:
            print(json.dumps({"event": "task", "task": task_id, "old": old, "new": new, "t": time.time()}), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("url", "app_id", "state_dir", "input", "output"):
        parser.add_argument(name)
    parser.add_argument("commit_ms", nargs="?", type=int, default=300)
    parser.add_argument("--topology", default="order_totals")
    parser.add_argument("--name", default="")
    parser.add_argument("--standbys", type=int, default=0)
    parser.add_argument("--session-ms", type=int, default=10_000)
    parser.add_argument("--probing-ms", type=int, default=600_000)
    parser.add_argument("--recovery-lag", type=int, default=10_000)
    parser.add_argument("--warmups", type=int, default=2)
    parser.add_argument("--server", default=None)
    parser.add_argument("--guarantee", default="at_least_once")
    parser.add_argument("--table", default=None)
    args = parser.parse_args()
    # a hung instance's thread stacks: Instance.stop sends SIGUSR1 before it kills one that did not exit
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(process)d %(threadName)s %(name)s %(message)s"
    )
    if args.topology == "versioned_enrichment":
        topology = versioned_enrichment(args.input, args.table, args.output)
    elif args.topology == "key_counts":
        topology = key_counts(args.input, args.output, args.name)
    elif args.topology.startswith("click_windows"):
        topology = click_windows(args.input, args.output, cache=args.topology == "click_windows")
    else:
        topology = order_totals(args.input, args.output)
    lock = threading.Lock()
    app = StreamsApp(
        topology,
        args.app_id,
        args.url,
        state_dir=args.state_dir,
        commit_interval_ms=args.commit_ms,
        num_standby_replicas=args.standbys,
        session_timeout_ms=args.session_ms,
        probing_rebalance_interval_ms=args.probing_ms,
        acceptable_recovery_lag=args.recovery_lag,
        max_warmup_replicas=args.warmups,
        application_server=args.server,
        processing_guarantee=args.guarantee,
        state_listener=Events(lock),
    )
    done = threading.Event()

    def report() -> None:
        last = None
        while not done.wait(0.1):
            m = app.metrics()
            snapshot = {k: m[k] for k in REPORTED}
            if snapshot != last:
                with lock:
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
