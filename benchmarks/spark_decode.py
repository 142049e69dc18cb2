"""Decoding registry-framed payloads in PySpark: from_registry's engines against a plain Python UDF.

    .venv/bin/python benchmarks/spark_decode.py [--rows 1000000] [--reps 3] [--registry URL] [--only avro|protobuf]

Workload: 1M (``--rows``) Confluent-framed records of an 8-field schema (long, string, double, boolean,
nullable string, enum, array<int>, nested record with a nullable field) in 8 uncompressed parquet files, read
once and cached, then decoded on ``local[2]`` by
  (a) a plain row-at-a-time Python UDF with fastavro (what users write today; ``useArrow=False``),
  (b) ``from_registry`` with the JVM engine,
  (c) ``from_registry`` with the Python engine (Arrow UDF);
and the same record as Protobuf: (d) a plain UDF parsing with the generated class and building the dict by hand,
(e) ``from_registry`` (Python engine).

Each run aggregates over the decoded fields (so Spark cannot prune the decode) and checks the result against
values computed while generating the data. Reps are interleaved across methods (the two cores are shared with
other work) and round 0 is a warm-up; prints rows/s (best and median of the timed rounds) and the ratios.
Without ``--registry`` it starts ``python -m registry serve`` on a temporary SQLite log and a free port.
Without the jar (`python -m serdes.spark.build_jar`, needs javac), (b) is skipped.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import fastavro  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from own_registry import own_registry  # noqa: E402  (benchmarks/ is on sys.path when run as a script)

SCHEMA = {"type": "record", "name": "User", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": "string"},
    {"name": "score", "type": "double"},
    {"name": "active", "type": "boolean"},
    {"name": "email", "type": ["null", "string"], "default": None},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["ACTIVE", "INACTIVE", "PENDING"]}},
    {"name": "tags", "type": {"type": "array", "items": "int"}},
    {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
        {"name": "street", "type": "string"}, {"name": "zip", "type": "int"},
        {"name": "country", "type": ["null", "string"], "default": None}]}},
]}
SPARK_TYPE = ("id bigint, name string, score double, active boolean, email string, status string, tags array<int>, "
              "address struct<street: string, zip: int, country: string>")
PROTO = """
syntax = "proto3";
package bench;
message User {
  enum Status { ACTIVE = 0; INACTIVE = 1; PENDING = 2; }
  int64 id = 1; string name = 2; double score = 3; bool active = 4; optional string email = 5;
  Status status = 6; repeated int32 tags = 7; Address address = 8;
}
message Address { string street = 1; int32 zip = 2; optional string country = 3; }
"""
STATUSES = ["ACTIVE", "INACTIVE", "PENDING"]
CHECK = ("sum(v.id) as sum_id, count(v.email) as n_email, sum(size(v.tags)) as n_tags, "
         "sum(v.address.zip) as sum_zip, count(v.address.country) as n_country, count(v.status) as n_status")


def record(i: int) -> dict:
    return {"id": i * 7919, "name": f"user-{i}", "score": i * 0.5, "active": i % 2 == 0,
            "email": None if i % 4 == 0 else f"u{i}@example.com", "status": STATUSES[i % 3],
            "tags": list(range(i % 6)), "address": {"street": f"{i % 1000} Main St", "zip": 10000 + i % 90000,
                                                   "country": None if i % 5 == 0 else "DE"}}


def expected(n: int) -> dict:
    return {"sum_id": sum(i * 7919 for i in range(n)), "n_email": sum(1 for i in range(n) if i % 4),
            "n_tags": sum(i % 6 for i in range(n)), "sum_zip": sum(10000 + i % 90000 for i in range(n)),
            "n_country": sum(1 for i in range(n) if i % 5), "n_status": n}


def write_parquet(frames: list[bytes], out: Path, files: int = 8) -> None:
    out.mkdir(parents=True)
    step = (len(frames) + files - 1) // files
    for k in range(files):
        chunk = frames[k * step:(k + 1) * step]
        table = pa.table({"offset": pa.array(range(k * step, k * step + len(chunk)), pa.int64()),
                          "value": pa.array(chunk, pa.binary())})
        pq.write_table(table, out / f"part-{k}.parquet", compression="none")


def compile_proto(workdir: Path):
    from grpc_tools import protoc

    (workdir / "bench_user.proto").write_text(PROTO)
    if protoc.main(["protoc", f"-I{workdir}", f"--python_out={workdir}", str(workdir / "bench_user.proto")]) != 0:
        raise RuntimeError("protoc failed")
    sys.path.insert(0, str(workdir))
    import bench_user_pb2  # type: ignore[import-not-found]

    return bench_user_pb2


def to_proto(pb, r: dict):
    m = pb.User(id=r["id"], name=r["name"], score=r["score"], active=r["active"], status=r["status"],
                tags=r["tags"], address=pb.Address(street=r["address"]["street"], zip=r["address"]["zip"]))
    if r["email"] is not None:
        m.email = r["email"]
    if r["address"]["country"] is not None:
        m.address.country = r["address"]["country"]
    return m


def plain_avro_udf(parsed: dict):
    """What users write today: one Python call per row, fastavro's schemaless_reader on the body."""
    from pyspark.sql import functions as F

    def decode(v: bytes | None) -> dict | None:
        if v is None or len(v) < 5 or v[0] != 0:
            return None
        bio = io.BytesIO(v)
        bio.seek(5)
        return fastavro.schemaless_reader(bio, parsed, None)

    return F.udf(decode, SPARK_TYPE, useArrow=False)


def plain_proto_udf(descriptor_bytes: bytes):
    """The Protobuf equivalent: parse with the message class, build the row dict by hand."""
    from pyspark.sql import functions as F

    state: dict = {}

    def user_class():
        cls = state.get("cls")
        if cls is None:
            from google.protobuf import descriptor_pb2, descriptor_pool
            from google.protobuf.message_factory import GetMessageClass

            pool = descriptor_pool.DescriptorPool()
            pool.Add(descriptor_pb2.FileDescriptorProto.FromString(descriptor_bytes))
            cls = state["cls"] = GetMessageClass(pool.FindMessageTypeByName("bench.User"))
        return cls

    def decode(v: bytes | None) -> dict | None:
        if v is None or len(v) < 6 or v[0] != 0 or v[5] != 0:  # User is the file's first message: index [0]
            return None
        m = user_class().FromString(v[6:])
        a = m.address
        return {"id": m.id, "name": m.name, "score": m.score, "active": m.active,
                "email": m.email if m.HasField("email") else None, "status": STATUSES[m.status],
                "tags": list(m.tags), "address": {"street": a.street, "zip": a.zip,
                                                  "country": a.country if a.HasField("country") else None}}

    return F.udf(decode, SPARK_TYPE, useArrow=False)


def run_once(df, col, want: dict) -> float:
    t = time.perf_counter()
    got = df.select(col.alias("v")).selectExpr(*CHECK.split(", ")).collect()[0].asDict()
    elapsed = time.perf_counter() - t
    if got != want:
        raise AssertionError(f"wrong decode: {got} != {want}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3, help="timed reps per method (after one warm-up)")
    ap.add_argument("--registry", help="use this registry instead of starting one")
    ap.add_argument("--only", choices=["avro", "protobuf"], help="run only the (a)-(c) or the (d)-(e) methods")
    args = ap.parse_args()
    if args.registry:
        run(args.registry, args.rows, args.reps, args.only)
    else:
        with own_registry() as url:
            run(url, args.rows, args.reps, args.only)


def run(url: str, n: int, reps: int, only: str | None = None) -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from serdes import AvroSerializer, ProtobufSerializer, RegistryClient
    from serdes.spark import from_registry, spark_session
    from serdes.spark.build_jar import JAR

    print(f"generating {n:,} rows...", flush=True)
    client = RegistryClient(url)
    subject = f"bench-spark-{os.getpid()}"
    records = [record(i) for i in range(n)]
    avro_frames = list(map(AvroSerializer(client, SCHEMA, subject=f"{subject}-avro"), records))
    work = Path(tempfile.mkdtemp(prefix="spark-decode-"))
    pb = compile_proto(work)
    proto_ser = ProtobufSerializer(client, pb.User, subject=f"{subject}-proto")
    proto_frames = [proto_ser(to_proto(pb, r)) for r in records]
    del records
    write_parquet(avro_frames, work / "avro")
    write_parquet(proto_frames, work / "proto")
    del avro_frames, proto_frames
    want = expected(n)

    spark = spark_session("local[2]", "spark-decode-bench", conf={
        "spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false", "spark.sql.files.maxPartitionBytes": str(max(n * 10, 1 << 20)),
        "spark.sql.execution.arrow.maxRecordsPerBatch": "10000"})
    spark.sparkContext.setLogLevel("ERROR")
    avro_df = spark.read.parquet(str(work / "avro")).select("value").cache()
    proto_df = spark.read.parquet(str(work / "proto")).select("value").cache()
    print(f"partitions: avro {avro_df.rdd.getNumPartitions()}, proto {proto_df.rdd.getNumPartitions()}; "
          f"cached {avro_df.count():,} + {proto_df.count():,} rows", flush=True)

    methods: list[tuple[str, Callable]] = [
        ("(a) avro plain UDF + fastavro", lambda: (avro_df, plain_avro_udf(fastavro.parse_schema(SCHEMA))("value"))),
    ]
    if JAR.exists():
        methods.append(("(b) avro from_registry, JVM engine",
                        lambda: (avro_df, from_registry("value", url, subject=f"{subject}-avro", engine="jvm"))))
    methods += [
        ("(c) avro from_registry, Python engine",
         lambda: (avro_df, from_registry("value", url, subject=f"{subject}-avro", engine="python"))),
        ("(d) protobuf plain UDF", lambda: (proto_df, plain_proto_udf(pb.User.DESCRIPTOR.file.serialized_pb)("value"))),
        ("(e) protobuf from_registry, Python engine",
         lambda: (proto_df, from_registry("value", url, subject=f"{subject}-proto", message="bench.User"))),
    ]
    if only:
        methods = [(name, build) for name, build in methods if name.split()[1] == only]
    # Reps are interleaved (every method once per round) so that neighbours on the shared cores slow all methods
    # alike; round 0 warms up the JVM and the Python workers and is not counted.
    built = [(name, *build()) for name, build in methods]
    times: dict[str, list[float]] = {name: [] for name, _, _ in built}
    for rnd in range(reps + 1):
        for name, df, col in built:
            elapsed = run_once(df, col, want)
            if rnd:
                times[name].append(elapsed)
            print(f"  round {rnd} {name:45s} {n / elapsed / 1000:8.0f}k rows/s", flush=True)
    results = {name: (n / min(t), n / statistics.median(t)) for name, t in times.items()}
    spark.stop()
    client.close()

    def ratio(a: str, b: str) -> str:
        ka = next((k for k in results if k.startswith(a)), None)
        kb = next((k for k in results if k.startswith(b)), None)
        if ka is None or kb is None:
            return "n/a"
        return f"{results[ka][0] / results[kb][0]:.2f}x (median {results[ka][1] / results[kb][1]:.2f}x)"

    print()
    print(f"{'method':45s} {'best k rows/s':>14s} {'median k rows/s':>16s}")
    for name, (best, median) in results.items():
        print(f"{name:45s} {best / 1000:14.0f} {median / 1000:16.0f}")
    print(f"JVM engine / plain UDF (target >= 8x):           {ratio('(b)', '(a)')}")
    print(f"Python engine / plain UDF (target >= 2x):        {ratio('(c)', '(a)')}")
    print(f"Protobuf Python engine / plain UDF (target >= 2x): {ratio('(e)', '(d)')}")


if __name__ == "__main__":
    main()
