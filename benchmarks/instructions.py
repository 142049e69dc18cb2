"""Instructions per operation, counted by valgrind's callgrind: steady where timing on a shared machine is not.

Each operation is a hot loop run in a child process under callgrind with instrumentation off (``--instr-atstart=
no``): the child builds its loop (imports, registry, plans built on the first call) at valgrind's uninstrumented
speed, says it is ready, and this script turns instrumentation on for the loop alone (``callgrind_control -i on``)
and off after it. That is done twice, for ``N`` and ``k·N`` operations, and the difference of the two counts
divided by ``(k - 1)·N`` is the cost of one operation: what the switching and the hand-over to the child cost
cancels out. Both runs use ``PYTHONHASHSEED=0``: string hashes decide dict layouts, and with them a few percent
of a count.

Operations (``--list`` prints them; the default runs all):

- ``avro-serialize`` / ``avro-deserialize``, ``protobuf-serialize`` / ``protobuf-deserialize``,
  ``json-serialize`` / ``json-deserialize``: our sync serdes on ``serdes_bench.py``'s 8-field order record (the
  same records and loops), registry ``mock://`` (in process); ``avro-event-serialize`` / ``avro-event-deserialize``
  the same on its Event record (logical types, fixed, wide unions); ``avro-resolve`` reads the order records as
  a later version of their schema (``serdes_bench.ORDER_AVRO_READER``: a promotion, an enum symbol, a union
  branch and a field more);
- ``registry-get-by-id``: ``GET /schemas/ids/{id}`` through the registry's ASGI app in process (an ASGI call on
  its event loop, no socket, no HTTP parsing), cycling over 100 registered schemas: the cached read path;
- ``window-update``: one record into a hopping 5 min / 1 min windowed count through ``TopologyTestDriver``
  (in-memory stores; the driver flushes and commits after every record, so changelog writes are counted);
- ``window-tumbling``: the same with a tumbling 5 min window;
- ``window-suppress`` / ``window-emit-final``: the hopping count with final results only, by
  ``suppress(until_window_closes())`` / ``emit_strategy="on_window_close"`` (``streams_windows_bench.py``'s jobs);
  ``window-tumbling-suppress`` / ``window-tumbling-emit-final`` the same for the tumbling count;
- ``bench-window-suppress`` / ``bench-window-emit-final`` / ``bench-window-tumbling-suppress`` /
  ``bench-window-tumbling-emit-final``: the same four jobs in ``streams_windows_bench.py``'s shape (its windows and
  topology, a new key per record, RocksDB state, a commit every 1,000 records instead of after each, several
  windows closing between two commits), where the uncommitted changes, the scans for closed windows and the
  emission weigh as they do in the benchmark (``N``: a multiple of 1,000).

    .venv/bin/python benchmarks/instructions.py                       # every operation
    .venv/bin/python benchmarks/instructions.py avro-serialize -n 2000 -k 3 --json out.json

Needs ``valgrind`` (``make bench-instructions`` installs it with apt and runs this). Python runs ~50 times slower
with instrumentation on, so ``N`` is kept to a few seconds of work per operation.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

from results_file import BenchRun, Case, Comparison, add_json_option  # noqa: E402

# A job builds its loop outside the counted difference and returns ``run(count)``, which does ``count`` operations.
Job = Callable[[], Callable[[int], None]]
# Folders a job made (state directories): the child removes them once counting is over.
_SCRATCH: list[str] = []


def _serdes(kind: str, direction: str) -> Callable[[int], None]:
    """Our sync serializer (or deserializer) of ``kind`` on the order records, 2,000 distinct ones cycled."""
    import serdes_bench as sb
    from confluent_kafka.serialization import MessageField, SerializationContext

    import serdes
    from tests.support.schemas import ORDER_AVRO, ORDER_JSON

    records = sb.make_events(2000) if kind == "avro-event" else sb.make_records(2000)
    client = serdes.RegistryClient("mock://instructions")
    ctx = SerializationContext("instructions", MessageField.VALUE)
    items: list = records
    ser: Callable[..., Any]
    de: Callable[..., Any]
    if kind == "protobuf":
        pb = sb.order_module()
        items = sb.proto_messages(pb, records)
        ser, de = serdes.ProtobufSerializer(client, pb.Order), serdes.ProtobufDeserializer(client, pb.Order)
    elif kind == "json":
        text = json.dumps(ORDER_JSON)
        ser, de = serdes.JsonSchemaSerializer(client, text), serdes.JsonSchemaDeserializer(client)
    else:
        schema = sb.EVENT_AVRO if kind == "avro-event" else ORDER_AVRO
        ser, de = serdes.AvroSerializer(client, schema), serdes.AvroDeserializer(client)
    frames = [ser(item, ctx) for item in items]  # plans built, registry called, outside the difference
    if direction == "resolve":  # read as an evolved reader schema: the generated resolver
        de = serdes.AvroDeserializer(client, sb.ORDER_AVRO_READER)
    fn, inputs = (ser, items) if direction == "serialize" else (de, frames)
    fn(inputs[0], ctx)

    def run(count: int) -> None:
        size = len(inputs)
        for i in range(count):
            fn(inputs[i % size], ctx)

    return run


def _registry_get_by_id() -> Callable[[int], None]:
    """``GET /schemas/ids/{id}`` straight into the registry app's ASGI callable, on the registry's own loop."""
    import httpx

    from registry.embedded import EmbeddedRegistry

    registry = EmbeddedRegistry("instructions")
    with httpx.Client(transport=httpx.MockTransport(registry.handle_sync), base_url="http://mock") as http:
        ids = []
        for i in range(100):
            body = {
                "schema": json.dumps({"type": "record", "name": f"R{i}", "fields": [{"name": "f", "type": "long"}]})
            }
            answer = http.post(f"/subjects/instructions-{i}/versions", json=body)
            answer.raise_for_status()
            ids.append(answer.json()["id"])
    app = registry.app
    scopes = [
        {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": f"/schemas/ids/{i}",
            "raw_path": f"/schemas/ids/{i}".encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"mock"), (b"accept", b"application/vnd.schemaregistry.v1+json")],
            "client": ("127.0.0.1", 50000),
            "server": ("mock", 80),
        }
        for i in ids
    ]
    statuses: list[int] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def loop(count: int) -> None:
        size = len(scopes)
        for i in range(count):
            await app(scopes[i % size], receive, send)

    registry.run(loop(len(scopes)))  # every id answered once: the cached path from here on
    if set(statuses) != {200}:
        raise RuntimeError(f"GET /schemas/ids answered {sorted(set(statuses))}")

    def run(count: int) -> None:
        registry.run(loop(count))

    return run


def _window(hopping: bool, final: str | None = None) -> Callable[[int], None]:
    """One record of 1,000 keys into a windowed count through ``TopologyTestDriver``, event time 600 ms apart;
    ``final``: final results only, by ``"suppress"`` (``until_window_closes``) or ``"emit-final"``
    (``emit_strategy="on_window_close"``), as ``streams_windows_bench.py`` runs them."""
    from datetime import timedelta

    from streams import StreamsBuilder, Suppressed, TimeWindows, TopologyTestDriver

    minute = timedelta(minutes=1)
    windows = TimeWindows.of_size_with_no_grace(5 * minute)
    if hopping:
        windows = windows.advance_by(minute)
    builder = StreamsBuilder()
    windowed = builder.stream("clicks", key=str, value="json").group_by_key().windowed_by(windows)
    if final == "suppress":
        counts = windowed.count(store="counts").suppress(Suppressed.until_window_closes())
    elif final == "emit-final":
        counts = windowed.count(store="counts", emit_strategy="on_window_close")
    else:
        counts = windowed.count(store="counts")
    counts.to_stream().map(lambda k, v: (k.key, v)).to("counts", key=str, value=int)
    driver = TopologyTestDriver(builder.build())
    clicks = driver.input_topic("clicks", key=str, value="json")
    out = driver.output_topic("counts", key=str, value=int)
    state = {"i": 0}
    base = 1_700_000_000_000

    def run(count: int) -> None:
        first = state["i"]
        for i in range(first, first + count):
            clicks.pipe_input(f"key-{i % 1000}", {"n": i}, timestamp=base + i * 600)
        state["i"] = first + count
        out.read_records()  # drop what was emitted, as a consumer would

    run(2000)  # stores, caches and windows warm, outside the difference
    return run


def _window_committing(hopping: bool, final: str) -> Callable[[int], None]:
    """``streams_windows_bench.py``'s job in its shape: every record a new key, a 1-minute (tumbling) or 5-minute /
    1-minute (hopping) windowed count with final results, ``to_stream().to()`` its topic, state in RocksDB, and a
    commit (flush, changelog, RocksDB write) every 1,000 records, not after each; event time 300 ms apart, so a
    window closes every 200 records and a commit covers several closes, as the benchmark's 5-second commits do.
    Records go straight into the driver's task (pre-serialized, one partition); the driver collects the output.
    The collector runs with the thresholds a ``StreamsApp`` sets (``streams/gc_tuning.py``): with the interpreter's,
    full collections over the stores' objects would weigh more than in the benchmark."""
    import gc
    import tempfile
    from datetime import timedelta

    from streams import StreamsBuilder, Suppressed, TimeWindows, TopologyTestDriver
    from streams.gc_tuning import STREAMS_THRESHOLDS
    from streams.log import RecordColumns

    gc.set_threshold(*STREAMS_THRESHOLDS)

    minute = timedelta(minutes=1)
    windows = (
        TimeWindows.of_size_with_no_grace(5 * minute).advance_by(minute)
        if hopping
        else TimeWindows.of_size_with_no_grace(minute)
    )
    builder = StreamsBuilder()
    windowed = builder.stream("clicks", key=str, value="json").group_by_key().windowed_by(windows)
    if final == "suppress":
        counts = windowed.count(store="counts").suppress(Suppressed.until_window_closes())
    else:
        counts = windowed.count(store="counts", emit_strategy="on_window_close")
    counts.to_stream().to("counts", value=int)
    state_dir = tempfile.mkdtemp(prefix="instructions-windows-")
    _SCRATCH.append(state_dir)
    driver = TopologyTestDriver(builder.build(), state_dir=state_dir)
    [task] = driver.tasks
    out = driver.output_topic("counts", key=bytes, value=bytes)
    state = {"i": 0}
    base = 1_700_000_000_000

    def run(count: int) -> None:
        if count % 1000:  # each run commits at every 1,000th record: the difference of two runs, whole commits
            raise ValueError(f"the bench-window-* loops need a multiple of 1,000 records, got {count}")
        first = state["i"]
        for at in range(first, first + count, 1000):  # a run of 1,000 records as the stream thread polls them
            offsets = list(range(at, at + 1000))
            keys = [b"key-%d" % (i % 100_000) for i in offsets]
            values = [b'{"n":%d}' % i for i in offsets]
            timestamps = [base + i * 300 for i in offsets]
            task.process_run(RecordColumns("clicks", 0, offsets, keys, values, timestamps, [()] * 1000))
            task.flush()
            task.committed(task.offsets_to_commit())
        state["i"] = first + count
        out.read_records()  # drop what was emitted, as a consumer would

    run(2000)  # stores, caches and windows warm, outside the difference
    return run


JOBS: dict[str, tuple[Job, int, str]] = {
    # name: (job, default N, what one operation is)
    "avro-serialize": (lambda: _serdes("avro", "serialize"), 2000, "record"),
    "avro-deserialize": (lambda: _serdes("avro", "deserialize"), 2000, "record"),
    "avro-resolve": (lambda: _serdes("avro", "resolve"), 2000, "record"),
    "avro-event-serialize": (lambda: _serdes("avro-event", "serialize"), 2000, "record"),
    "avro-event-deserialize": (lambda: _serdes("avro-event", "deserialize"), 2000, "record"),
    "protobuf-serialize": (lambda: _serdes("protobuf", "serialize"), 2000, "record"),
    "protobuf-deserialize": (lambda: _serdes("protobuf", "deserialize"), 2000, "record"),
    "json-serialize": (lambda: _serdes("json", "serialize"), 1000, "record"),
    "json-deserialize": (lambda: _serdes("json", "deserialize"), 1000, "record"),
    "registry-get-by-id": (_registry_get_by_id, 500, "request"),
    "window-update": (lambda: _window(hopping=True), 500, "input record"),
    "window-tumbling": (lambda: _window(hopping=False), 500, "input record"),
    "window-tumbling-suppress": (lambda: _window(hopping=False, final="suppress"), 500, "input record"),
    "window-tumbling-emit-final": (lambda: _window(hopping=False, final="emit-final"), 500, "input record"),
    "window-suppress": (lambda: _window(hopping=True, final="suppress"), 500, "input record"),
    "window-emit-final": (lambda: _window(hopping=True, final="emit-final"), 500, "input record"),
    "bench-window-tumbling-suppress": (lambda: _window_committing(False, "suppress"), 2000, "input record"),
    "bench-window-tumbling-emit-final": (lambda: _window_committing(False, "emit-final"), 2000, "input record"),
    "bench-window-suppress": (lambda: _window_committing(True, "suppress"), 2000, "input record"),
    "bench-window-emit-final": (lambda: _window_committing(True, "emit-final"), 2000, "input record"),
}


def _child(name: str, count: int) -> None:
    """Build the loop, then run ``count`` operations between two lines from the parent (instrumentation on)."""
    run = JOBS[name][0]()
    print("ready", flush=True)
    sys.stdin.readline()
    run(count)
    print("done", flush=True)
    sys.stdin.readline()
    for folder in _SCRATCH:
        shutil.rmtree(folder, ignore_errors=True)
    os._exit(0)  # skip interpreter teardown (threads, stores): not counted anyway, and slow under valgrind


def instrument(pid: int, on: bool) -> None:
    subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(pid)], capture_output=True, check=True)


def counted(name: str, count: int) -> int:
    """Instructions of ``count`` operations of ``name`` in a child process under callgrind."""
    with tempfile.TemporaryDirectory() as d:
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={d}/out"]
        child = subprocess.Popen(
            [*command, sys.executable, __file__, "--child", name, str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        assert child.stdin is not None and child.stdout is not None
        try:
            for line, switch_on in (("ready", True), ("done", False)):
                if child.stdout.readline().strip() != line:
                    break
                instrument(child.pid, switch_on)
                child.stdin.write("go\n")
                child.stdin.flush()
            _, stderr = child.communicate(timeout=1800)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    found = re.search(r"Collected : (\d+)", stderr)
    if child.returncode != 0 or found is None:
        raise RuntimeError(f"{name} x {count} under callgrind failed (exit {child.returncode}): {stderr[-800:]}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", nargs=2, metavar=("OP", "COUNT"), help=argparse.SUPPRESS)
    parser.add_argument("operations", nargs="*", metavar="OP", help="operations to count (default: all)")
    parser.add_argument("-n", type=int, help="operations in the small run (default: per operation)")
    parser.add_argument("-k", type=int, default=3, help="the large run does k·N operations (default 3)")
    parser.add_argument("--list", action="store_true", help="list the operations and exit")
    add_json_option(parser)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]))
    if args.list:
        for name, (_, n, unit) in JOBS.items():
            print(f"{name:<26} per {unit}, N = {n}")
        return 0
    unknown = [name for name in args.operations if name not in JOBS]
    if unknown:
        parser.error(f"unknown operation(s) {', '.join(unknown)}; --list shows them")
    if args.k < 2:
        parser.error("-k must be at least 2")
    committing = [name for name in args.operations or list(JOBS) if name.startswith("bench-window-")]
    if committing and args.n is not None and args.n % 1000:
        parser.error(f"{', '.join(committing)}: -n must be a multiple of 1,000 (they commit every 1,000 records)")
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind not found: make bench-instructions installs it (apt-get install valgrind)", file=sys.stderr)
        return 2
    run = BenchRun(__file__, {"operations": args.operations or None, "n": args.n, "k": args.k})
    started = time.perf_counter()
    print(f"instructions per operation, callgrind, {datetime.now(UTC):%Y-%m-%d}, Python {sys.version.split()[0]}")
    print(f"| {'operation':<26} | {'N':>6} | {'instructions / op':>17} |")
    print(f"|{'-' * 28}|{'-' * 7}:|{'-' * 18}:|")
    cases = []
    for name in args.operations or list(JOBS):
        _, default_n, unit = JOBS[name]
        n = args.n or default_n
        small, large = counted(name, n), counted(name, args.k * n)
        per = (large - small) / ((args.k - 1) * n)
        print(f"| {name:<26} | {n:>6} | {per:>17,.0f} |", flush=True)
        cases.append(Case(name, per, None, {"per": unit, "n": n, "k": args.k}))
    print(f"({time.perf_counter() - started:.0f} s under callgrind)")
    run.write(args.json, [Comparison("instructions per operation", "instructions", "schemakit", "", cases, False)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
