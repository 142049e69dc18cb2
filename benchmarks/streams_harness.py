"""What the streams benchmarks share: ``streams_bench.py``, ``streams_windows_bench.py``, ``streams_joins_bench.py``
and ``streams_failover_bench.py``.

Each bench keeps its topologies (but the count by key that two of them run, ``count_by_key``) and its table rows;
this module holds the rest: the test broker and its topics (``bench_broker``, ``kafka_url``), feeding the input
(``produce``), the common command-line flags (``bench_parser``), timing a run of ours by polling its metrics
(``time_ours``) and one of Quix Streams by counting the records its dataframe sees (``QuixClock``), running one
job in a child process of its own so that peak RSS and CPU seconds are that job's alone (``ChildJob``,
``parse_job_args``, ``run_jobs``, ``child_main``), and the Markdown table (``print_table``, ``ratio``).
Throughput is always counted from the first input record processed, so the group join is excluded for both.
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import confluent_kafka
import orjson
from results_file import add_json_option

from streams import StreamsBuilder
from streams.app import StreamsApp
from streams.log import Log, open_log
from streams.log.kafka.log import FETCH_QUEUE_BACKOFF_MS
from tests.support.broker import TEST_CLIENT_OPTIONS, TansuBroker

if TYPE_CHECKING:
    from quixstreams import Application

    from streams.topology import Topology

PARTITIONS = 4
BASE_MS = 1_700_000_000_000  # librdkafka sends a timestamp of 0 as "now"
# tansu reports only explicitly set topic configs; Quix derives its changelog settings from these.
INPUT_TOPIC_CONFIG = {"retention.ms": "604800000", "retention.bytes": "-1"}

Row = tuple[str, Any, int]  # key, value (written as JSON), timestamp in ms (0: the producer's clock)
QuixGuarantee = Literal["at-least-once", "exactly-once"]
Result = dict[str, float]  # "elapsed" and "rate"; from a child also "rss_mib" and "cpu_s"


def kafka_url(bootstrap: str, **options: str) -> str:
    """Our log URL for the test broker: the test suite's client options, ``options`` overriding them."""
    return f"kafka://{bootstrap}?{urlencode({**TEST_CLIENT_OPTIONS, **options})}"


def produce(
    bootstrap: str, topic: str, rows: Iterable[Row], on_delivery: Callable[[Any, Any], None] | None = None
) -> int:
    """Writes ``rows`` to ``topic`` (keys spread as Java clients do), waits for all; returns how many.
    ``on_delivery(error, message)`` is called for each record once the broker has it (or has refused it)."""
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 500_000,
            "partitioner": "murmur2_random",
        }
    )
    n = 0
    for key, value, ts in rows:
        while True:
            try:
                producer.produce(topic, orjson.dumps(value), key.encode(), timestamp=ts, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        n += 1
        if n % 10_000 == 0:
            producer.poll(0)
    producer.flush()
    return n


@dataclass(frozen=True)
class BenchBroker:
    """A running test broker, our log on it and a scratch folder (state directories go below it)."""

    bootstrap: str
    log: Log
    work: Path

    @property
    def url(self) -> str:
        return kafka_url(self.bootstrap)

    def create_input(self, topic: str) -> None:
        self.log.create_topic(topic, PARTITIONS, config=INPUT_TOPIC_CONFIG)

    def create_output(self, topic: str) -> None:
        self.log.create_topic(topic, PARTITIONS)


@contextmanager
def bench_broker(prefix: str) -> Iterator[BenchBroker]:
    """Starts tansu in a fresh temporary folder; stops it and removes the folder on the way out."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    broker = TansuBroker(work / "broker.log")
    broker.start()
    try:
        log = open_log(kafka_url(broker.bootstrap))
        try:
            yield BenchBroker(broker.bootstrap, log, work)
        finally:
            log.close()
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def bench_parser(doc: str | None, only: Sequence[str] = (), records_help: str | None = None) -> argparse.ArgumentParser:
    """``--records`` and ``--skip-quix``, and ``--only`` when the bench has several ``only`` jobs."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000, help=records_help)
    parser.add_argument("--skip-quix", action="store_true")
    if only:
        parser.add_argument("--only", choices=list(only))
    return parser


# -- ours


def count_by_key(topic: str, out: str, cache: bool = True) -> Topology:
    """A count per key of ``topic``'s JSON records, written to ``out``."""
    b = StreamsBuilder()
    (
        b.stream(topic, key=str, value="json")
        .group_by_key()
        .count(store="counts", cache=cache)
        .to_stream()
        .to(out, key=str, value=int)
    )
    return b.build()


def ours_app(topology: Topology, url: str, state_dir: Path, app_id: str | None = None, **options: Any) -> StreamsApp:
    """Our app with no progress log lines (they would land in the timed span); ``options`` go to ``StreamsApp``."""
    app_id = app_id or f"bench-ours-{uuid.uuid4().hex[:6]}"
    return StreamsApp(topology, app_id, url, state_dir=state_dir, progress_interval_s=3600, **options)


def time_ours(
    app: StreamsApp, total: int, *, poll_s: float, poll_after_first_s: float | None = None, time_close: bool = True
) -> tuple[float, dict[str, Any]]:
    """Starts ``app``, polls its metrics until it has processed ``total`` records, closes it.

    Returns the seconds from the first record processed to the last one (``time_close``: to the app closed,
    its final commit included) and the last metrics read. ``metrics()`` walks every task and takes the GIL from
    the stream threads: ``poll_after_first_s`` polls less often once the start is marked (a late end mark only
    counts against us).
    """
    app.start()
    first: float | None = None
    while True:
        metrics = app.metrics()
        if app.error is not None:
            raise app.error
        if metrics["processed"] and first is None:
            first = time.perf_counter()
        if metrics["processed"] >= total:
            break
        time.sleep(poll_s if first is None or poll_after_first_s is None else poll_after_first_s)
    end = time.perf_counter()
    app.close()
    if time_close:
        end = time.perf_counter()
    return end - (first or end), metrics


# -- Quix Streams


def quix_app(bootstrap: str, state_dir: Path, guarantee: QuixGuarantee = "at-least-once") -> Application:
    """A Quix Streams application reading from the start with the same client options as ours."""
    from quixstreams import Application

    return Application(
        broker_address=bootstrap,
        consumer_group=f"bench-quix-{uuid.uuid4().hex[:6]}",
        auto_offset_reset="earliest",
        state_dir=str(state_dir),
        loglevel="WARNING",
        consumer_extra_config={
            **{k: int(v) for k, v in TEST_CLIENT_OPTIONS.items()},
            "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,  # as our log's consumers
        },
        processing_guarantee=guarantee,
    )


class QuixClock:
    """Called on every input record of a Quix Streams app (e.g. ``sdf.update(clock)``): marks the first one and
    stops the app at the ``total``-th, its ``run()`` then returning after the final checkpoint."""

    def __init__(self, app: Application, total: int) -> None:
        self.app, self.total = app, total
        self.seen = 0
        self.first = self.last = 0.0

    def __call__(self, _value: Any = None) -> None:
        self.seen += 1
        if self.seen == 1:
            self.first = time.perf_counter()
        if self.seen == self.total:
            self.last = time.perf_counter()
            self.app.stop()

    def run(self, *, time_stop: bool = True) -> float:
        """Runs the app; seconds from the first record to the last (``time_stop``: to the app stopped)."""
        self.app.run()
        return (time.perf_counter() if time_stop else self.last) - self.first


def rate(total: int, elapsed: float) -> Result:
    return {"elapsed": elapsed, "rate": total / elapsed}


# -- one job per child process


@dataclass(frozen=True)
class ChildJob:
    """One run of one runtime on one job, passed to a child process as hidden flags of the bench's own script."""

    job: str
    runtime: str
    bootstrap: str
    topics: list[str]
    out: str
    state: Path
    total: int

    @staticmethod
    def add_flags(parser: argparse.ArgumentParser) -> None:
        for flag in ("--job", "--runtime", "--bootstrap", "--topics", "--out", "--state"):
            parser.add_argument(flag, help=argparse.SUPPRESS)
        parser.add_argument("--total", type=int, help=argparse.SUPPRESS)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ChildJob | None:
        """The job this process is the child for, or None in the parent."""
        if not args.job:
            return None
        return cls(
            args.job, args.runtime, args.bootstrap, args.topics.split(","), args.out, Path(args.state), args.total
        )

    def argv(self) -> list[str]:
        return [
            "--job",
            self.job,
            "--runtime",
            self.runtime,
            "--bootstrap",
            self.bootstrap,
            "--topics",
            ",".join(self.topics),
            "--out",
            self.out,
            "--state",
            str(self.state),
            "--total",
            str(self.total),
        ]


def parse_job_args(parser: argparse.ArgumentParser, run_job: Callable[[ChildJob], Result]) -> argparse.Namespace:
    """The arguments of a bench that runs its jobs in child processes (``parser``'s, ``ChildJob``'s hidden flags and
    ``--json``); in a child, runs its job with ``run_job`` and exits."""
    ChildJob.add_flags(parser)
    add_json_option(parser)
    args = parser.parse_args()
    if child := ChildJob.from_args(args):
        sys.exit(child_main(child, run_job))
    logging.basicConfig(level=logging.WARNING)
    return args


def child_main(job: ChildJob, run: Callable[[ChildJob], Result]) -> int:
    """The child's side: runs ``job``, prints its result with this process's peak RSS and CPU as one JSON line."""
    logging.basicConfig(level=logging.WARNING)
    result = run(job)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["rss_mib"] = usage.ru_maxrss / 1024
    result["cpu_s"] = usage.ru_utime + usage.ru_stime  # the whole process: less sensitive to a busy machine
    print(json.dumps(result), flush=True)
    return 0


def run_jobs(
    script: str,
    bench: BenchBroker,
    inputs: Mapping[str, list[str]],
    totals: Mapping[str, int],
    labels: Mapping[str, str],
) -> dict[str, dict[str, Result]]:
    """The parent's side: each job (``inputs``: job -> its input topics) with each runtime (``labels``: runtime ->
    its name), one after the other, each in a child process running ``script``. Prints a line per run."""
    results: dict[str, dict[str, Result]] = {job: {} for job in inputs}
    job_width, label_width = max(map(len, inputs)), max(map(len, labels.values()))
    for job, topics in inputs.items():
        for runtime, label in labels.items():
            out = f"out-{job}-{runtime}"
            bench.create_output(out)
            child = ChildJob(
                job, runtime, bench.bootstrap, topics, out, bench.work / f"state-{job}-{runtime}", totals[job]
            )
            cmd = [sys.executable, script, *child.argv()]
            done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)  # its warnings show
            results[job][runtime] = r = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"{job:{job_width}s} {label:{label_width}s} {r['elapsed']:7.2f}s {r['rate']:10,.0f} records/s "
                f"peak RSS {r['rss_mib']:6.0f} MiB, {r['cpu_s']:.1f} s CPU",
                flush=True,
            )
    return results


# -- the table


def ratio(ours: float | None, peer: float | None) -> str:
    """``ours / peer`` as "1.23x", "-" when either is missing."""
    return f"{ours / peer:.2f}x" if ours and peer else "-"


def print_table(header: Sequence[str], rows: Iterable[Sequence[object]], text_columns: int = 1) -> None:
    """A Markdown table; the first ``text_columns`` are left-aligned, the numbers after them right-aligned."""
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * text_columns + "---:|" * (len(header) - text_columns))
    for row in rows:
        print("| " + " | ".join(map(str, row)) + " |")
