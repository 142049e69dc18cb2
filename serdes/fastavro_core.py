"""The fastavro entry points the hot paths call, resolved once.

fastavro's public ``schemaless_writer``/``schemaless_reader`` rebuild their option and named-schema dicts and
re-check the schema on every call. Their compiled cores, ``_write.write_data`` (appends to a bytearray) and
``_read._read_data`` (reads from a file object), take those as arguments, so we build them once per schema.
If a fastavro release moves these internals, we fall back to the public functions.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import fastavro

WRITE_OPTIONS: dict[str, Any] = {"strict": False, "strict_allow_default": False, "disable_tuple_notation": False}


def read_options(return_record_name: bool = False, return_record_name_override: bool = False) -> dict[str, Any]:
    return {"return_record_name": return_record_name, "return_record_name_override": return_record_name_override,
            "handle_unicode_errors": "strict", "return_named_type": False, "return_named_type_override": False}


write_data: Callable[[bytearray, Any, Any, dict, str, dict], None]
read_data: Callable[[io.BytesIO, Any, dict, Any, dict], Any]

try:
    from fastavro._read import _read_data as read_data  # type: ignore[no-redef]
    from fastavro._write import write_data as write_data  # type: ignore[no-redef]

    FAST = True
except ImportError:  # pure-Python fastavro or moved internals: same results through the public API
    FAST = False

    def write_data(buf: bytearray, datum: Any, schema: Any, named: dict, fname: str, options: dict) -> None:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, schema, datum, strict=options["strict"])
        buf += out.getvalue()

    def read_data(fo: io.BytesIO, writer: Any, named: dict, reader: Any, options: dict) -> Any:
        return fastavro.schemaless_reader(fo, writer, reader, options["return_record_name"],
                                          options["return_record_name_override"])
