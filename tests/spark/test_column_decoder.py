"""The Python engine's column-wise Avro decoder against fastavro, on random records and on damaged bodies.

The decoder is all-or-nothing: whatever it accepts must be exactly what fastavro reads (to the body's last byte);
anything else must raise so the batch falls back to the row-wise path.
"""

from __future__ import annotations

import io
import random
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_type

from serdes.spark.column_decoder import avro_column_decoder
from serdes.spark.types import avro_to_spark

SCHEMA = {
    "type": "record",
    "name": "R",
    "fields": [
        {"name": "a", "type": "long"},
        {"name": "b", "type": ["string", "null"]},
        {"name": "f", "type": "float"},
        {"name": "by", "type": ["null", "bytes"]},
        {"name": "ok", "type": ["null", "boolean"]},
        {"name": "e", "type": ["null", {"type": "enum", "name": "E", "symbols": ["X", "Y"]}]},
        {
            "name": "n",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "N",
                    "fields": [
                        {"name": "i", "type": "int"},
                        {"name": "l", "type": {"type": "array", "items": ["null", "string"]}},
                        {"name": "ee", "type": "E"},
                        {
                            "name": "inner",
                            "type": [
                                "null",
                                {"type": "record", "name": "I", "fields": [{"name": "z", "type": "double"}]},
                            ],
                        },
                    ],
                },
            ],
        },
        {"name": "arr", "type": {"type": "array", "items": ["null", "N"]}},
        {"name": "aa", "type": ["null", {"type": "array", "items": {"type": "array", "items": "int"}}]},
    ],
}


@pytest.fixture(scope="module")
def codec() -> tuple[Any, Any, Any]:
    named: dict[str, Any] = {}
    parsed = fastavro.parse_schema(SCHEMA, named_schemas=named)
    arrow_type = to_arrow_type(avro_to_spark(SCHEMA)[0], timezone="UTC")
    return parsed, arrow_type, avro_column_decoder(parsed, named, arrow_type)


def random_record(rnd: random.Random) -> dict[str, Any]:
    def maybe(f: Any) -> Any:
        return None if rnd.random() < 0.3 else f()

    def s() -> str:
        return "".join(rnd.choice("aé€😀b") for _ in range(rnd.randint(0, 5)))

    def n() -> dict[str, Any]:
        return {
            "i": rnd.randint(-(2**31), 2**31 - 1),
            "l": [maybe(s) for _ in range(rnd.randint(0, 3))],
            "ee": rnd.choice("XY"),
            "inner": maybe(lambda: {"z": rnd.random()}),
        }

    return {
        "a": rnd.randint(-(2**63), 2**63 - 1) if rnd.random() < 0.3 else rnd.randint(-300, 300),
        "b": maybe(s),
        "f": float(rnd.randint(-5, 5)) / 4,
        "by": maybe(lambda: bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 4)))),
        "ok": maybe(lambda: rnd.random() < 0.5),
        "e": maybe(lambda: rnd.choice("XY")),
        "n": maybe(n),
        "arr": [maybe(n) for _ in range(rnd.randint(0, 3))],
        "aa": maybe(lambda: [[rnd.randint(-9, 9) for _ in range(rnd.randint(0, 3))] for _ in range(rnd.randint(0, 3))]),
    }


def run(decode: Any, bodies: list[bytes]) -> Any:
    starts, ends, pos = [], [], 0
    for b in bodies:
        starts.append(pos)
        pos += len(b)
        ends.append(pos)
    return decode(b"".join(bodies), starts, ends)


def random_bodies(parsed: Any, rnd: random.Random, n: int) -> list[bytes]:
    """``n`` random records written by fastavro."""
    bodies = []
    for _ in range(n):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, random_record(rnd))
        bodies.append(buf.getvalue())
    return bodies


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_valid_records_equal_fastavro(codec: tuple[Any, Any, Any], seed: int) -> None:
    parsed, arrow_type, decode = codec
    bodies = random_bodies(parsed, random.Random(seed), 500)
    out = run(decode, bodies)
    expected = pa.array([fastavro.schemaless_reader(io.BytesIO(b), parsed, None) for b in bodies], type=arrow_type)
    assert out.equals(expected)


@pytest.mark.parametrize("seed", [7, 8])
def test_damaged_bodies_are_accepted_only_when_fastavro_agrees(codec: tuple[Any, Any, Any], seed: int) -> None:
    parsed, arrow_type, decode = codec
    rnd = random.Random(seed)
    originals = random_bodies(parsed, rnd, 200)
    accepted = rejected = 0
    for _ in range(3000):
        b = bytearray(rnd.choice(originals))
        op = rnd.random()
        if op < 0.4 and b:
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        elif op < 0.7 and b:
            del b[rnd.randrange(len(b)) :]
        else:
            b += bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 3)))
        body = bytes(b)
        try:
            col = run(decode, [body])
        except Exception:
            rejected += 1
            continue
        accepted += 1
        bio = io.BytesIO(body)
        record = fastavro.schemaless_reader(bio, parsed, None)
        assert bio.tell() == len(body), body
        assert col.equals(pa.array([record], type=arrow_type)), body
    assert accepted > 0 and rejected > 0  # both sides of the contract were exercised
