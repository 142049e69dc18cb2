"""fastavro's compiled read/write cores, which the hot paths call directly, with the public API as fallback.

fastavro's public ``schemaless_writer``/``schemaless_reader`` rebuild their option and named-schema dicts and
re-check the schema on every call. Their compiled cores, ``_write.write_data`` (appends to a bytearray) and
``_read._read_data`` (reads from a file object), take those as arguments, so we build them once per schema.
If fastavro is the pure-Python build or a release moves these internals, ``write_data``/``read_data`` are
stand-ins with the same signatures that go through the public functions (same results, slower); ``FAST`` says
which is in use.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import fastavro

__all__ = ["FAST", "WRITE_OPTIONS", "read_data", "read_options", "write_data"]

WriteData = Callable[[bytearray, Any, Any, dict, str, dict], None]  # (buf, datum, schema, named, fname, options)
ReadData = Callable[[io.BytesIO, Any, dict, Any, dict], Any]  # (fo, writer, named, reader, options) -> record

WRITE_OPTIONS: dict[str, Any] = {"strict": False, "strict_allow_default": False, "disable_tuple_notation": False}


def read_options(return_record_name: bool = False, return_record_name_override: bool = False) -> dict[str, Any]:
    """The options dict ``read_data`` takes (fastavro's reader defaults apart from the two union flags)."""
    return {
        "return_record_name": return_record_name,
        "return_record_name_override": return_record_name_override,
        "handle_unicode_errors": "strict",
        "return_named_type": False,
        "return_named_type_override": False,
    }


def _public_write_data(buf: bytearray, datum: Any, schema: Any, named: dict, fname: str, options: dict) -> None:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, datum, strict=options["strict"])
    buf += out.getvalue()


def _public_read_data(fo: io.BytesIO, writer: Any, named: dict, reader: Any, options: dict) -> Any:
    return fastavro.schemaless_reader(
        fo, writer, reader, options["return_record_name"], options["return_record_name_override"]
    )


write_data: WriteData
read_data: ReadData
try:
    from fastavro import _read, _write

    # fastavro's _read.pyi/_write.pyi stubs declare only the public classes, not these compiled functions.
    write_data = _write.write_data  # type: ignore[attr-defined]
    read_data = _read._read_data  # type: ignore[attr-defined]
    FAST = True
except (ImportError, AttributeError):  # pure-Python fastavro or moved internals
    write_data = _public_write_data
    read_data = _public_read_data
    FAST = False
