"""Instructions per record, counted by valgrind's callgrind: steadier than timing on a shared machine.

Two jobs, each run under callgrind for a small and a large count; the difference divided by the extra records
is the cost of one record, without the start-up (imports, registry, RocksDB):

- ``serdes {avro,json,protobuf}``: our sync serializer and our async one in ``serdes_bench.py``'s own loops
  (``each`` / ``each_async``), 2,000 records per pass, registry ``mock://``; 1 vs 6 passes. This is the
  async / sync comparison of the README's asyncio table.
- ``windows {suppress,emit}``: a hopping 5 min / 1 min count with final results (``suppress`` or
  ``emit_strategy="on_window_close"``) in one ``StreamTask`` on RocksDB, without a log (changelog and output
  records are counted, not sent), committing every ``keys / 2`` records; 10,000 records of 1,000 keys vs 30,000
  of 3,000. This is the in-process figure of the README's windowed section.

    .venv/bin/python benchmarks/instructions.py serdes protobuf
    .venv/bin/python benchmarks/instructions.py windows suppress

Needs ``valgrind`` (``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BENCH_DIR = Path(__file__).resolve().parent


def serdes_job(kind: str, mode: str, passes: int) -> None:
    """``passes`` passes of 2,000 records through our sync or async serializer of ``kind``."""
    sys.path.insert(0, str(BENCH_DIR))
    import serdes_bench as sb
    from confluent_kafka.serialization import MessageField, SerializationContext

    import serdes

    records = sb.make_records(2000)
    client, aclient = serdes.RegistryClient("mock://instructions"), serdes.AsyncRegistryClient("mock://instructions")
    ctx = SerializationContext("instructions", MessageField.VALUE)
    items: list = records
    if kind == "protobuf":
        pb = sb.order_module()
        items = sb.proto_messages(pb, records)
        sync, aio = serdes.ProtobufSerializer(client, pb.Order), serdes.AsyncProtobufSerializer(aclient, pb.Order)
    elif kind == "json":
        text = json.dumps(sb.ORDER_JSON_SCHEMA)
        sync, aio = serdes.JsonSchemaSerializer(client, text), serdes.AsyncJsonSchemaSerializer(aclient, text)
    else:
        sync, aio = serdes.AvroSerializer(client, sb.ORDER_SCHEMA), serdes.AsyncAvroSerializer(aclient, sb.ORDER_SCHEMA)
    loop = asyncio.new_event_loop()
    sync(items[0], ctx)  # plans built outside the counted difference
    loop.run_until_complete(aio(items[0], ctx))
    run = sb.each(sync, items, ctx) if mode == "sync" else sb.each_async(loop, aio, items, ctx)
    for _ in range(passes):
        run()


def windows_job(emit: str, records: int) -> None:
    """``records`` clicks of ``records // 10`` keys over 10 minutes of event time through one task."""
    import orjson

    from streams import StreamsBuilder, Suppressed, TimeWindows, gc_policy
    from streams.handlers import handler_from
    from streams.log.base import Record
    from streams.metadata import TopicNames
    from streams.task import StreamTask, TaskEnv

    keys, minute = records // 10, timedelta(minutes=1)
    b = StreamsBuilder()
    windowed = (
        b.stream("clicks", key=str, value="json")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(5 * minute).advance_by(minute))
    )
    if emit == "suppress":
        counts = windowed.count(store="counts").suppress(Suppressed.until_window_closes())
    else:
        counts = windowed.count(store="counts", emit_strategy="on_window_close")
    counts.to_stream().to("finals", value=int)
    topology = b.build()
    sent = [0]

    def send(topic: str, value: bytes | None, key: bytes | None = None, **_: object) -> None:
        sent[0] += 1

    def send_batch(topic: str, partition: int, batch: list, **_: object) -> None:
        sent[0] += len(batch)

    class Clock:
        def now_ms(self) -> int:
            return 0

    gc_policy.relax_full_collections()  # as a running application does
    env = TaskEnv(application_id="instructions", topology=topology, send=send, clock=Clock(),
                  state_dir=Path(tempfile.mkdtemp()), default_store="rocksdb", cache_max_entries=10_000_000,
                  deserialization_handler=handler_from("fail"), topic_names=TopicNames("instructions"),
                  partitions_of=lambda topic: 1, send_batch=send_batch)  # fmt: skip
    [sub] = list(topology.sub_topologies())
    task = StreamTask(sub, 0, env)
    task.init_processors()
    base, span = 1_700_000_000_000, 10 * 60 * 1000
    clicks = [Record("clicks", 0, i, f"key-{i % keys}".encode(), orjson.dumps({"n": i}), base + i * span // records,
                     ()) for i in range(records)]  # fmt: skip
    commit_every = keys // 2
    for i, record in enumerate(clicks, 1):
        task.process(record)
        if i % commit_every == 0:
            task.flush()
            task.committed(task.offsets_to_commit())
    task.flush()
    task.committed(task.offsets_to_commit())
    task.close(clean=True)


def counted(args: list[str]) -> int:
    """Instructions of this script run with ``args`` under callgrind."""
    with tempfile.TemporaryDirectory() as d:
        # A fixed hash seed: string hashes decide dict layouts, and with them a few percent of the count.
        done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/out", sys.executable,
                               __file__, "--child", *args], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": "0"})  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count from callgrind: {done.stderr[-500:]}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("job", choices=["serdes", "windows"])
    parser.add_argument("kind", help="serdes: avro, json or protobuf; windows: suppress or emit")
    parser.add_argument("extra", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.job == "serdes":
            serdes_job(args.kind, args.extra[0], int(args.extra[1]))
        else:
            windows_job(args.kind, int(args.extra[0]))
        return 0
    started = time.perf_counter()
    if args.job == "serdes":
        if args.kind not in ("avro", "json", "protobuf"):
            parser.error("serdes takes avro, json or protobuf")
        per = {}
        for mode in ("sync", "async"):
            small, large = (counted(["serdes", args.kind, mode, str(n)]) for n in (1, 6))
            per[mode] = (large - small) / (5 * 2000)
            print(f"{args.kind} serialize, {mode}: {per[mode]:,.0f} instructions per record", flush=True)
        print(f"async / sync by instructions: {per['sync'] / per['async']:.3f}")
    else:
        if args.kind not in ("suppress", "emit"):
            parser.error("windows takes suppress or emit")
        small, large = (counted(["windows", args.kind, str(n)]) for n in (10_000, 30_000))
        print(f"hopping count, {args.kind}: {(large - small) / 20_000:,.0f} instructions per input record")
    print(f"({time.perf_counter() - started:.0f} s under callgrind; CPU count {os.cpu_count()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
