"""fastavro's compiled read/write cores, which the hot paths call directly, with the public API as fallback.

fastavro's public ``schemaless_writer``/``schemaless_reader`` rebuild their option and named-schema dicts and
re-check the schema on every call. Their compiled cores, ``_write.write_data`` (appends to a bytearray) and
``_read._read_data`` (reads from a file object), take those as arguments, so we build them once per schema.

Both are private to fastavro, so importing this module checks them (``check_core``): each must take the
parameters we pass, in our order (``inspect.signature``; Cython's binding gives fastavro's compiled functions
one), and a one-value round trip through both must give the value back. A fastavro whose cores differ fails the
import with one ``UnsupportedFastavro`` naming the versions supported (``SUPPORTED``) rather than writing wrong
bytes later. A pure-Python fastavro (no compiled ``_read``/``_write``) is a fastavro build, not a change of its
internals: then ``write_data``/``read_data`` are stand-ins with the same signatures that go through the public
functions (same results, slower); ``FAST`` says which is in use.
"""

from __future__ import annotations

import inspect
import io
from collections.abc import Callable
from typing import Any

import fastavro

__all__ = [
    "FAST",
    "SUPPORTED",
    "WRITE_OPTIONS",
    "UnsupportedFastavro",
    "check_core",
    "read_data",
    "read_options",
    "write_data",
]

WriteData = Callable[[bytearray, Any, Any, dict, str, dict], None]  # (buf, datum, schema, named, fname, options)
ReadData = Callable[[io.BytesIO, Any, dict, Any, dict], Any]  # (fo, writer, named, reader, options) -> record

# The releases whose compiled cores have the parameters below (checked in fastavro's sources from 1.9.0, the
# floor in pyproject.toml, to 1.12.2, and in the installed 1.13.1).
SUPPORTED = "fastavro 1.9 to 1.13"
WRITE_DATA_PARAMETERS = ("fo", "datum", "schema", "named_schemas", "fname", "options")
READ_DATA_PARAMETERS = ("fo", "writer_schema", "named_schemas", "reader_schema", "options")

WRITE_OPTIONS: dict[str, Any] = {"strict": False, "strict_allow_default": False, "disable_tuple_notation": False}


class UnsupportedFastavro(ImportError):
    """The installed fastavro's private cores are not the ones serdes calls."""


def read_options(return_record_name: bool = False, return_record_name_override: bool = False) -> dict[str, Any]:
    """The options dict ``read_data`` takes (fastavro's reader defaults apart from the two union flags)."""
    return {
        "return_record_name": return_record_name,
        "return_record_name_override": return_record_name_override,
        "handle_unicode_errors": "strict",
        "return_named_type": False,
        "return_named_type_override": False,
    }


def _unsupported(why: str) -> UnsupportedFastavro:
    return UnsupportedFastavro(
        f"serdes calls fastavro's compiled write_data and _read_data directly (serdes/fastavro_core.py) and supports "
        f"{SUPPORTED}; the installed fastavro {fastavro.__version__} differs: {why}. Install a supported fastavro."
    )


def _check_parameters(name: str, function: Callable[..., Any], expected: tuple[str, ...]) -> None:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # compiled without a signature: the round trip in check_core decides
        return
    found = tuple(signature.parameters)
    positional = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in signature.parameters.values())
    if found != expected or not positional:
        bare = [p.replace(annotation=p.empty) for p in signature.parameters.values()]
        shown = signature.replace(parameters=bare, return_annotation=signature.empty)
        raise _unsupported(f"{name} takes {shown}, where ({', '.join(expected)}) is expected")


def check_core(write: Callable[..., Any], read: Callable[..., Any]) -> None:
    """Raise ``UnsupportedFastavro`` unless ``write`` and ``read`` are the cores this module calls: their
    parameters, then an int written and read back as we call them."""
    _check_parameters("_write.write_data", write, WRITE_DATA_PARAMETERS)
    _check_parameters("_read._read_data", read, READ_DATA_PARAMETERS)
    buf = bytearray()
    try:
        write(buf, -3, "long", {}, "", WRITE_OPTIONS)
        value = read(io.BytesIO(bytes(buf)), "long", {"writer": {}, "reader": {}}, None, read_options())
    except Exception as e:
        raise _unsupported(f"a long written and read back raised {type(e).__name__}: {e}") from e
    if bytes(buf) != b"\x05" or value != -3:
        raise _unsupported(f"-3 as a long was written as {bytes(buf)!r} and read back as {value!r}")


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
except ImportError:  # a pure-Python fastavro
    write_data = _public_write_data
    read_data = _public_read_data
    FAST = False
else:
    # fastavro's _read.pyi/_write.pyi stubs declare only the public classes, not these compiled functions.
    _compiled_write = getattr(_write, "write_data", None)
    _compiled_read = getattr(_read, "_read_data", None)
    if _compiled_write is None or _compiled_read is None:
        raise _unsupported("its compiled _write.write_data or _read._read_data is missing")
    check_core(_compiled_write, _compiled_read)
    write_data = _compiled_write
    read_data = _compiled_read
    FAST = True
