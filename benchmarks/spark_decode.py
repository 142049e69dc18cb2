"""Decoding registry-framed payloads in PySpark: from_registry's engines against a plain Python UDF.

    .venv/bin/python benchmarks/spark_decode.py [--rows 1000000] [--reps 3] [--registry URL]
                                                [--only avro|protobuf|mixed]

Workload: 1M (``--rows``) Confluent-framed records of an 8-field schema (long, string, double, boolean,
nullable string, enum, array<int>, nested record with a nullable field) in 8 uncompressed parquet files, read
once and cached, then decoded on ``local[2]`` by
  (a) a plain row-at-a-time Python UDF with fastavro (what users write today; ``useArrow=False``),
  (b) ``from_registry`` with the JVM engine,
  (c) ``from_registry`` with the Python engine (Arrow UDF);
and the same record as Protobuf: (d) a plain UDF parsing with the generated class and building the dict by hand,
(e) ``from_registry`` (Python engine).

Mixed versions: the rows alternate between v1 (the schema above) and v2 (v1 plus ``level``, an int with a
default), all decoded to v2 and aggregated over every field (count, sums over scalars, string lengths, the
nested record, the array's size and elements, the new field): (f) a plain Python UDF resolving each row's
writer schema to v2 with fastavro, (g) ``from_registry`` with the JVM engine, (h) with the Python engine.

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
from results_file import BenchRun, Case, Comparison, add_json_option  # noqa: E402

SCHEMA = {
    "type": "record",
    "name": "User",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "score", "type": "double"},
        {"name": "active", "type": "boolean"},
        {"name": "email", "type": ["null", "string"], "default": None},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["ACTIVE", "INACTIVE", "PENDING"]}},
        {"name": "tags", "type": {"type": "array", "items": "int"}},
        {
            "name": "address",
            "type": {
                "type": "record",
                "name": "Address",
                "fields": [
                    {"name": "street", "type": "string"},
                    {"name": "zip", "type": "int"},
                    {"name": "country", "type": ["null", "string"], "default": None},
                ],
            },
        },
    ],
}
SPARK_TYPE = (
    "id bigint, name string, score double, active boolean, email string, status string, tags array<int>, "
    "address struct<street: string, zip: int, country: string>"
)
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
SCHEMA_V2 = {**SCHEMA, "fields": [*SCHEMA["fields"], {"name": "level", "type": "int", "default": 1}]}
SPARK_TYPE_V2 = SPARK_TYPE + ", level int"
STATUSES = ["ACTIVE", "INACTIVE", "PENDING"]
CHECK = (
    "sum(v.id) as sum_id, count(v.email) as n_email, sum(size(v.tags)) as n_tags, "
    "sum(v.address.zip) as sum_zip, count(v.address.country) as n_country, count(v.status) as n_status"
)


# Every field of v2 takes part: counts, sums, string lengths, the nested record, the array's size and elements.
MIXED_CHECK = [
    "count(*) as n",
    "count(v) as n_decoded",
    "sum(v.id) as sum_id",
    "sum(length(v.name)) as len_name",
    "sum(v.score) as sum_score",
    "sum(if(v.active, 1, 0)) as n_active",
    "count(v.email) as n_email",
    "sum(length(v.email)) as len_email",
    "sum(length(v.status)) as len_status",
    "sum(size(v.tags)) as n_tags",
    "sum(aggregate(v.tags, 0L, (acc, x) -> acc + x)) as sum_tags",
    "sum(length(v.address.street)) as len_street",
    "sum(v.address.zip) as sum_zip",
    "count(v.address.country) as n_country",
    "sum(v.level) as sum_level",
]


def record(i: int) -> dict:
    return {
        "id": i * 7919,
        "name": f"user-{i}",
        "score": i * 0.5,
        "active": i % 2 == 0,
        "email": None if i % 4 == 0 else f"u{i}@example.com",
        "status": STATUSES[i % 3],
        "tags": list(range(i % 6)),
        "address": {"street": f"{i % 1000} Main St", "zip": 10000 + i % 90000, "country": None if i % 5 == 0 else "DE"},
    }


def expected(n: int) -> dict:
    return {
        "sum_id": sum(i * 7919 for i in range(n)),
        "n_email": sum(1 for i in range(n) if i % 4),
        "n_tags": sum(i % 6 for i in range(n)),
        "sum_zip": sum(10000 + i % 90000 for i in range(n)),
        "n_country": sum(1 for i in range(n) if i % 5),
        "n_status": n,
    }


def mixed_record(i: int) -> tuple[bool, dict]:
    """Row i of the mixed-version data: (written with v2?, record). Odd rows are v2 and carry ``level``."""
    r = record(i)
    if i % 2:
        r["level"] = i % 10
        return True, r
    return False, r


def expected_mixed(n: int) -> dict:
    want = {
        "n": n,
        "n_decoded": n,
        "sum_id": 0,
        "len_name": 0,
        "sum_score": 0.0,
        "n_active": 0,
        "n_email": 0,
        "len_email": 0,
        "len_status": 0,
        "n_tags": 0,
        "sum_tags": 0,
        "len_street": 0,
        "sum_zip": 0,
        "n_country": 0,
        "sum_level": 0,
    }
    for i in range(n):
        v2, r = mixed_record(i)
        want["sum_id"] += r["id"]
        want["len_name"] += len(r["name"])
        want["sum_score"] += r["score"]
        want["n_active"] += r["active"]
        want["n_email"] += r["email"] is not None
        want["len_email"] += len(r["email"] or "")
        want["len_status"] += len(r["status"])
        want["n_tags"] += len(r["tags"])
        want["sum_tags"] += sum(r["tags"])
        want["len_street"] += len(r["address"]["street"])
        want["sum_zip"] += r["address"]["zip"]
        want["n_country"] += r["address"]["country"] is not None
        want["sum_level"] += r["level"] if v2 else 1  # v1 rows get the reader's default
    return want


def write_parquet(frames: list[bytes], out: Path, files: int = 8) -> None:
    out.mkdir(parents=True)
    step = (len(frames) + files - 1) // files
    for k in range(files):
        chunk = frames[k * step : (k + 1) * step]
        table = pa.table(
            {
                "offset": pa.array(range(k * step, k * step + len(chunk)), pa.int64()),
                "value": pa.array(chunk, pa.binary()),
            }
        )
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
    m = pb.User(
        id=r["id"],
        name=r["name"],
        score=r["score"],
        active=r["active"],
        status=r["status"],
        tags=r["tags"],
        address=pb.Address(street=r["address"]["street"], zip=r["address"]["zip"]),
    )
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


def plain_mixed_udf(writers: dict[int, dict], reader: dict):
    """A plain UDF over mixed versions: each row's writer schema (by the id in its frame) resolved to ``reader``."""
    from pyspark.sql import functions as F

    def decode(v: bytes | None) -> dict | None:
        if v is None or len(v) < 5 or v[0] != 0:
            return None
        writer = writers.get(int.from_bytes(v[1:5], "big"))
        if writer is None:
            return None
        bio = io.BytesIO(v)
        bio.seek(5)
        return fastavro.schemaless_reader(bio, writer, reader)

    return F.udf(decode, SPARK_TYPE_V2, useArrow=False)


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
        return {
            "id": m.id,
            "name": m.name,
            "score": m.score,
            "active": m.active,
            "email": m.email if m.HasField("email") else None,
            "status": STATUSES[m.status],
            "tags": list(m.tags),
            "address": {"street": a.street, "zip": a.zip, "country": a.country if a.HasField("country") else None},
        }

    return F.udf(decode, SPARK_TYPE, useArrow=False)


def run_once(df, col, want: dict) -> float:
    check = MIXED_CHECK if "sum_level" in want else CHECK.split(", ")
    t = time.perf_counter()
    got = df.select(col.alias("v")).selectExpr(*check).collect()[0].asDict()
    elapsed = time.perf_counter() - t
    if got != want:
        raise AssertionError(f"wrong decode: {got} != {want}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3, help="timed reps per method (after one warm-up)")
    ap.add_argument("--registry", help="use this registry instead of starting one")
    ap.add_argument(
        "--only", choices=["avro", "protobuf", "mixed"], help="run only the (a)-(c), the (d)-(e) or the (f)-(h) methods"
    )
    add_json_option(ap)
    args = ap.parse_args()
    bench_run = BenchRun(__file__, vars(args))
    if args.registry:
        results = run(args.registry, args.rows, args.reps, args.only)
    else:
        with own_registry() as url:
            results = run(url, args.rows, args.reps, args.only)
    by_letter = {name[:3]: (name, rates) for name, rates in results.items()}  # "(b)" -> (name, (best, median))
    cases = [
        Case(by_letter[ours][0], by_letter[ours][1][0], by_letter[peer][1][0], {"peer case": by_letter[peer][0]})
        for ours, peer in (("(b)", "(a)"), ("(c)", "(a)"), ("(e)", "(d)"), ("(g)", "(f)"), ("(h)", "(f)"))
        if ours in by_letter and peer in by_letter
    ]
    bench_run.write(
        args.json,
        [Comparison("decoding", "rows/s, best round", "from_registry", "a plain Python UDF", cases)],
        {f"{name}: median rows/s": median for name, (_, median) in results.items()},
    )


def run(url: str, n: int, reps: int, only: str | None = None) -> dict[str, tuple[float, float]]:
    """Prints the table; returns rows/s per method, best and median of the timed rounds."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from serdes import AvroSerializer, ProtobufSerializer, RegistryClient
    from serdes.spark import from_registry, spark_session
    from serdes.spark.build_jar import JAR

    groups = [only] if only else ["avro", "protobuf", "mixed"]
    print(f"generating {n:,} rows for {', '.join(groups)}...", flush=True)
    client = RegistryClient(url)
    subject = f"bench-spark-{os.getpid()}"
    work = Path(tempfile.mkdtemp(prefix="spark-decode-"))
    writers: dict[int, dict] = {}
    if "avro" in groups or "protobuf" in groups:
        records = [record(i) for i in range(n)]
        if "avro" in groups:
            write_parquet(list(map(AvroSerializer(client, SCHEMA, subject=f"{subject}-avro"), records)), work / "avro")
        if "protobuf" in groups:
            pb = compile_proto(work)
            proto_ser = ProtobufSerializer(client, pb.User, subject=f"{subject}-proto")
            write_parquet([proto_ser(to_proto(pb, r)) for r in records], work / "proto")
        del records
    if "mixed" in groups:
        v1 = AvroSerializer(client, SCHEMA, subject=f"{subject}-mixed")
        v2 = AvroSerializer(client, SCHEMA_V2, subject=f"{subject}-mixed")
        frames = [(v2 if is_v2 else v1)(r) for is_v2, r in map(mixed_record, range(n))]
        write_parquet(frames, work / "mixed")
        for frame, schema in ((frames[0], SCHEMA), (frames[1], SCHEMA_V2)):
            writers[int.from_bytes(frame[1:5], "big")] = fastavro.parse_schema(schema)
        del frames
    want = expected(n)
    want_mixed = expected_mixed(n) if "mixed" in groups else {}

    spark = spark_session(
        "local[2]",
        "spark-decode-bench",
        conf={
            "spark.driver.memory": "2g",
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.files.maxPartitionBytes": str(max(n * 10, 1 << 20)),
            "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    frames_df = {}
    for group in groups:
        folder = "proto" if group == "protobuf" else group
        df = frames_df[group] = spark.read.parquet(str(work / folder)).select("value").cache()
        print(f"{group}: {df.rdd.getNumPartitions()} partitions, cached {df.count():,} rows", flush=True)

    avro_df, proto_df, mixed_df = (frames_df.get(g) for g in ("avro", "protobuf", "mixed"))
    jvm = JAR.exists()
    methods: list[tuple[str, Callable]] = []
    if "avro" in groups:
        methods.append(
            (
                "(a) avro plain UDF + fastavro",
                lambda: (avro_df, plain_avro_udf(fastavro.parse_schema(SCHEMA))("value"), want),
            )
        )
        if jvm:
            methods.append(
                (
                    "(b) avro from_registry, JVM engine",
                    lambda: (avro_df, from_registry("value", url, subject=f"{subject}-avro", engine="jvm"), want),
                )
            )
        methods.append(
            (
                "(c) avro from_registry, Python engine",
                lambda: (avro_df, from_registry("value", url, subject=f"{subject}-avro", engine="python"), want),
            )
        )
    if "protobuf" in groups:
        methods += [
            (
                "(d) protobuf plain UDF",
                lambda: (proto_df, plain_proto_udf(pb.User.DESCRIPTOR.file.serialized_pb)("value"), want),
            ),
            (
                "(e) protobuf from_registry, Python engine",
                lambda: (proto_df, from_registry("value", url, subject=f"{subject}-proto", message="bench.User"), want),
            ),
        ]
    if "mixed" in groups:
        methods.append(
            (
                "(f) mixed v1/v2 plain UDF + fastavro",
                lambda: (mixed_df, plain_mixed_udf(writers, fastavro.parse_schema(SCHEMA_V2))("value"), want_mixed),
            )
        )
        if jvm:
            methods.append(
                (
                    "(g) mixed v1/v2 from_registry, JVM engine",
                    lambda: (
                        mixed_df,
                        from_registry("value", url, subject=f"{subject}-mixed", engine="jvm"),
                        want_mixed,
                    ),
                )
            )
        methods.append(
            (
                "(h) mixed v1/v2 from_registry, Python engine",
                lambda: (
                    mixed_df,
                    from_registry("value", url, subject=f"{subject}-mixed", engine="python"),
                    want_mixed,
                ),
            )
        )
    # Reps are interleaved (every method once per round) so that neighbours on the shared cores slow all methods
    # alike; round 0 warms up the JVM and the Python workers and is not counted.
    built = [(name, *build()) for name, build in methods]
    times: dict[str, list[float]] = {name: [] for name, _, _, _ in built}
    for rnd in range(reps + 1):
        for name, df, col, wanted in built:
            elapsed = run_once(df, col, wanted)
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
    print(f"mixed v1/v2, JVM engine / plain UDF (target >= 8x): {ratio('(g)', '(f)')}")
    print(f"mixed v1/v2, Python engine / plain UDF:            {ratio('(h)', '(f)')}")
    return results


if __name__ == "__main__":
    main()
