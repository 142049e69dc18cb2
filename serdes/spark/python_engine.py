"""The Python engine: decode a whole Arrow batch of framed payloads into an Arrow array of the mapped type.

Runs inside Spark's Python workers through an Arrow UDF (``functions.py``), one ``pyarrow.BinaryArray`` of
~10k rows per call. Per worker process, decoders are cached by reader spec and writer schemas by id (Spark
reuses Python workers, so the cache outlives a task), registry clients by URL.

Avro: the frame headers of the batch are checked with numpy on the Arrow buffers. When a batch has one writer
schema equal to the reader schema (no resolution, no value conversion), a decoder generated for that schema
(``converters.avro_column_decoder``) reads every body straight into per-field column lists and builds the Arrow
array from them, with no dict per record (~1.5x the row-wise path). It is all or nothing: any row it cannot
read exactly (bad body, not ending at its frame's end, unsupported value) and the batch goes the row-wise way.
There each body is read by fastavro's compiled reader from one ``BytesIO`` over the batch's data buffer (no
per-row ``bytes``), and the reader position after each record must land exactly on the frame's end, so a
truncated or over-long body is caught per row. Protobuf and JSON go through serdes' deserializers row by row
and a per-schema converter. Row-wise, the rows of a batch become one Arrow array with
``pyarrow.array(rows, type)``; if that fails, the rows that do not fit are found one by one and treated as
undecodable.
"""

from __future__ import annotations

import gc
import io
import json
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass
from pyspark.sql.pandas.types import to_arrow_type

from serdes import fastavro_core, wire
from serdes.avro import parse_avro_schema
from serdes.base import fetch_writer_schema
from serdes.client import RegistryClient
from serdes.errors import RegistryError, SerializationError
from serdes.json_serdes import JsonSchemaDeserializer
from serdes.models import Schema
from serdes.protobuf import ProtobufDeserializer
from serdes.spark.converters import (
    Unsupported,
    avro_column_decoder,
    avro_converter,
    avro_needs_record_names,
    json_converter,
    protobuf_converter,
)
from serdes.spark.proto_arrow import messages_to_arrow
from serdes.spark.reader import ReaderSpec
from serdes.spark.types import AvroNames

__all__ = ["DecodeFailure", "RegistryUnreachable", "decode_batch", "decoder_for"]

_PREFIX = wire.PREFIX_SIZE


class DecodeFailure(SerializationError):
    """FAILFAST: a row could not be decoded. The message names the row, its schema id and the reason."""


class RegistryUnreachable(RuntimeError):
    """The registry did not answer (or answered 5xx) for a writer schema. Not a property of the row, so it fails
    the task in every mode (Spark retries tasks) instead of turning good rows into nulls."""


_lock = threading.RLock()
_clients: dict[str, RegistryClient] = {}
_decoders: dict[tuple[ReaderSpec, str], BatchDecoder] = {}


def registry_client(url: str) -> RegistryClient:
    """One client (and its id -> schema cache) per registry URL per Python worker process."""
    client = _clients.get(url)
    if client is None:
        with _lock:
            client = _clients.get(url)
            if client is None:
                client = _clients[url] = RegistryClient(url, latest_ttl=None)
    return client


def decoder_for(spec: ReaderSpec, options: str = "") -> BatchDecoder:
    key = (spec, options)
    dec = _decoders.get(key)
    if dec is None:
        with _lock:
            dec = _decoders.get(key)
            if dec is None:
                cls = {"AVRO": AvroBatchDecoder, "JSON": JsonBatchDecoder, "PROTOBUF": ProtobufBatchDecoder}
                dec = _decoders[key] = cls[spec.kind](spec, registry_client(spec.registry), options)
    return dec


def decode_batch(spec: ReaderSpec, mode: str, error_column: bool, options: str, values: pa.Array) -> pa.Array:
    """Entry point of the Arrow UDF (kept small: it is what gets pickled by reference)."""
    return decoder_for(spec, options).decode(values, mode == "FAILFAST", error_column)


def _partition() -> str:
    try:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        return f" of partition {ctx.partitionId()}" if ctx is not None else ""
    except ImportError:  # pragma: no cover - pyspark is there whenever this runs in Spark
        return ""


class _Rows:
    """Per-batch output: decoded rows, error reasons, and the FAILFAST switch."""

    __slots__ = ("array", "errors", "fail_fast", "rows")

    def __init__(self, n: int, fail_fast: bool, error_column: bool) -> None:
        self.array: pa.Array | None = None  # set when the batch was decoded straight into Arrow
        self.rows: list[Any] = [None] * n
        self.errors: list[str | None] | None = [None] * n if error_column else None
        self.fail_fast = fail_fast

    def fail(self, i: int, schema_id: int | None, reason: str) -> None:
        if self.fail_fast:
            sid = f"schema id {schema_id}" if schema_id is not None else "no schema id"
            raise DecodeFailure(f"from_registry (FAILFAST): cannot decode row {i} of the Arrow batch{_partition()} "
                                f"({sid}): {reason}", schema_id=schema_id)
        self.rows[i] = None
        if self.errors is not None:
            self.errors[i] = reason


class BatchDecoder:
    """Decodes framed payloads of one reader spec into Arrow arrays of the spec's Spark type."""

    def __init__(self, spec: ReaderSpec, client: RegistryClient, options: str) -> None:
        self.spec = spec
        self.client = client
        self.options = json.loads(options) if options else {}
        self.arrow_type = to_arrow_type(spec.spark_type, timezone="UTC")
        self.error_type = pa.struct([pa.field("value", self.arrow_type), pa.field("error", pa.string())])
        self.unknown_ids: dict[int, SerializationError] = {}  # ids the registry said it does not have

    def writer_schema(self, schema_id: int, fmt: str | None = None) -> Schema:
        known = self.unknown_ids.get(schema_id)
        if known is not None:
            raise known
        try:
            return fetch_writer_schema(self.client, schema_id, None, fmt)
        except SerializationError as e:
            cause = e.__cause__
            if isinstance(cause, RegistryError) and cause.status == 404:
                self.unknown_ids[schema_id] = e  # a missing id stays missing: do not ask again for every row
            elif isinstance(cause, RegistryError) and (cause.status < 0 or cause.status >= 500):
                raise RegistryUnreachable(f"from_registry: cannot fetch writer schema {schema_id}: {cause}") from e
            raise

    def decode(self, values: pa.Array, fail_fast: bool, error_column: bool) -> pa.Array:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        out = _Rows(len(values), fail_fast, error_column)
        # A batch keeps ~10k freshly decoded dicts alive until it becomes Arrow: the cyclic GC would scan them
        # again and again (measured: half the decode time). They hold no cycles, so pause it for the batch.
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            if len(values):
                self.decode_rows(values, out)
            result = self._to_arrow(out)
        finally:
            if gc_was_on:
                gc.enable()
        if not error_column:
            return result
        errors = pa.array(out.errors, pa.string())
        return pa.StructArray.from_arrays([result, errors], fields=list(self.error_type),
                                          mask=values.is_null())

    def decode_rows(self, values: pa.Array, out: _Rows) -> None:
        raise NotImplementedError

    def _to_arrow(self, out: _Rows) -> pa.Array:
        if out.array is not None:
            return out.array
        try:
            return pa.array(out.rows, type=self.arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            pass
        # Some row does not fit the Spark type (e.g. a JSON string where a number belongs): find it.
        for i, row in enumerate(out.rows):
            if row is None:
                continue
            try:
                pa.array([row], type=self.arrow_type)
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
                out.fail(i, None, f"decoded record does not fit the Spark type: {type(e).__name__}: {e}")
        return pa.array(out.rows, type=self.arrow_type)


class _WriterPlan(NamedTuple):
    """How to read the bodies written with one writer schema id."""

    writer: Any  # fastavro-parsed writer schema
    named: dict  # {"writer": ..., "reader": ...} named types, as fastavro's _read_data takes them
    reader: Any  # parsed reader schema, None when the writer schema equals it
    columns: Callable[[bytes, list, list], pa.Array] | None  # the column decoder, when the batch can use one


class AvroBatchDecoder(BatchDecoder):
    def __init__(self, spec: ReaderSpec, client: RegistryClient, options: str) -> None:
        super().__init__(spec, client, options)
        reader_schema = Schema(spec.reader)
        self._named_texts = spec.named
        self._reader_named: dict = {}
        for text in spec.named:
            parse_avro_schema(Schema(text), None, self._reader_named)
        self._reader_doc = json.loads(spec.reader)
        self._reader, self._reader_named = parse_avro_schema(reader_schema, None, self._reader_named)
        names = AvroNames()
        for text in spec.named:
            avro_converter(json.loads(text), names)
        self._convert = avro_converter(self._reader_doc, names)
        self._read_options = fastavro_core.read_options(*(2 * [avro_needs_record_names(self._reader_doc, names)]))
        self._plans: dict[int, _WriterPlan] = {}

    def _plan(self, schema_id: int) -> _WriterPlan:
        writer = self.writer_schema(schema_id)
        if writer.schema_type != "AVRO":
            raise SerializationError(f"schema {schema_id} is {writer.schema_type}, not AVRO", schema_id=schema_id)
        try:
            w_parsed, w_named = parse_avro_schema(writer, self.client)
        except (ValueError, RegistryError) as e:
            raise SerializationError(f"cannot parse writer schema {schema_id}: {e}", schema_id=schema_id) from e
        same = json.loads(writer.schema_str) == self._reader_doc and not self._named_texts
        reader = None if same else self._reader
        columns = None
        if same and self._convert is None and not self._read_options["return_record_name"]:
            # No resolution and no value conversion: decode the batch straight into Arrow columns
            try:
                columns = avro_column_decoder(w_parsed, w_named, self.arrow_type)
            except (Unsupported, ValueError, KeyError, TypeError, SyntaxError, RecursionError):
                columns = None
        plan = _WriterPlan(w_parsed, {"writer": w_named, "reader": self._reader_named}, reader, columns)
        self._plans[schema_id] = plan
        return plan

    def _fast(self, data: bytes, starts: np.ndarray, ends: np.ndarray, schema_id: int, out: _Rows) -> bool:
        """The common batch: every frame well-formed, one writer schema, no value conversion. A tight loop;
        on the first problem it gives up (False) and the general loop redoes the batch row by row."""
        plan = self._plans.get(schema_id)
        if plan is None:
            try:
                plan = self._plan(schema_id)
            except SerializationError:
                return False
        starts_l = (starts + _PREFIX).tolist()
        ends_l = ends.tolist()
        if plan.columns is not None:
            try:
                out.array = plan.columns(data, starts_l, ends_l)
                return True
            except Exception:  # some row is not plain: fastavro reads the batch, row by row
                pass
        read = fastavro_core.read_data
        options = self._read_options
        writer, named, reader = plan.writer, plan.named, plan.reader
        bio = io.BytesIO(data)
        seek = bio.seek
        tell = bio.tell
        rows: list[Any] = []
        append = rows.append
        try:
            for start, end in zip(starts_l, ends_l, strict=True):
                seek(start)
                append(read(bio, writer, named, reader, options))
                if tell() != end:
                    return False
        except Exception:  # a bad body: the general loop names it
            return False
        out.rows = rows
        return True

    def decode_rows(self, values: pa.Array, out: _Rows) -> None:
        n = len(values)
        if not pa.types.is_binary(values.type):
            values = values.cast(pa.binary())
        offsets = np.frombuffer(values.buffers()[1], dtype=np.int32, count=n + 1, offset=values.offset * 4)
        data_buf = values.buffers()[2]
        data = data_buf.to_pybytes() if data_buf is not None else b""
        buf = np.frombuffer(data, dtype=np.uint8)
        starts = offsets[:-1].astype(np.int64)
        ends = offsets[1:].astype(np.int64)
        ok = (ends - starts) >= _PREFIX
        if values.null_count:
            ok &= np.asarray(values.is_valid())
        if len(buf):
            at = np.where(ok, starts, 0)
            ok &= buf[at] == wire.MAGIC_BYTE
            ids = ((buf[np.minimum(at + 1, len(buf) - 1)].astype(np.int64) << 24)
                   | (buf[np.minimum(at + 2, len(buf) - 1)].astype(np.int64) << 16)
                   | (buf[np.minimum(at + 3, len(buf) - 1)].astype(np.int64) << 8)
                   | buf[np.minimum(at + 4, len(buf) - 1)].astype(np.int64))
        else:
            ids = np.zeros(n, dtype=np.int64)
        if n and self._convert is None and ok.all() and (ids == ids[0]).all() and self._fast(data, starts, ends,
                                                                                            int(ids[0]), out):
            return
        valid = values.is_valid().to_pylist() if values.null_count else None
        plans = self._plans
        read = fastavro_core.read_data
        options = self._read_options
        convert = self._convert
        rows = out.rows
        bio = io.BytesIO(data)
        seek = bio.seek
        tell = bio.tell
        columns = zip(ok.tolist(), starts.tolist(), ends.tolist(), ids.tolist(), strict=True)
        for i, (good, start, end, sid) in enumerate(columns):
            if not good:
                if valid is not None and not valid[i]:
                    continue  # null in, null out
                try:
                    wire.read_schema_id(data[start:end])  # raises with the specific frame problem
                    reason = "bad frame"
                except SerializationError as e:
                    reason = str(e)
                out.fail(i, None, reason)
                continue
            plan = plans.get(sid)
            if plan is None:
                try:
                    plan = self._plan(sid)
                except SerializationError as e:
                    out.fail(i, sid, str(e))
                    continue
            seek(start + _PREFIX)
            try:
                record = read(bio, plan.writer, plan.named, plan.reader, options)
            except Exception as e:  # fastavro raises EOFError, ValueError, IndexError... on a bad body
                out.fail(i, sid, f"cannot decode Avro payload with writer schema {sid}: {type(e).__name__}: {e}")
                continue
            pos = tell()
            if pos != end:
                if pos < end:
                    why = f"{end - pos} unread bytes after the Avro record: the payload does not match writer " \
                          f"schema {sid}"
                else:
                    why = f"payload ends {pos - end} bytes before the Avro record of writer schema {sid} is complete"
                out.fail(i, sid, why)
                continue
            if convert is not None:
                try:
                    record = convert(record)
                except (ValueError, TypeError) as e:
                    out.fail(i, sid, f"cannot map the Avro record to the Spark type: {e}")
                    continue
            rows[i] = record


class _RowwiseDecoder(BatchDecoder):
    """JSON and Protobuf: serdes' deserializer per row, then the per-schema converter."""

    deserialize: Callable[[bytes], Any]
    convert: Callable[[Any], Any] | None

    def decode_rows(self, values: pa.Array, out: _Rows) -> None:
        deserialize = self.deserialize
        convert = self.convert
        rows = out.rows
        for i, data in enumerate(values.to_pylist()):
            if data is None:
                continue
            try:
                value = deserialize(data)
                rows[i] = value if convert is None or value is None else convert(value)
            except SerializationError as e:
                out.fail(i, e.schema_id, str(e))
            except (ValueError, TypeError, KeyError, AttributeError) as e:
                out.fail(i, _schema_id(data), f"cannot map the record to the Spark type: {type(e).__name__}: {e}")


def _schema_id(data: bytes) -> int | None:
    return int.from_bytes(data[1:5], "big") if len(data) >= _PREFIX else None


class _CachedClient:
    """The worker's client with unknown ids remembered (serdes' deserializers fetch through it)."""

    def __init__(self, decoder: BatchDecoder) -> None:
        self._decoder = decoder
        self._client = decoder.client

    def get_schema(self, schema_id: int, subject: str | None = None, fmt: str | None = None) -> Schema:
        known = self._decoder.unknown_ids.get(schema_id)
        if known is not None:
            raise known.__cause__ if isinstance(known.__cause__, RegistryError) else known
        try:
            return self._client.get_schema(schema_id, subject, fmt)
        except RegistryError as e:
            if e.status < 0 or e.status >= 500:
                raise RegistryUnreachable(f"from_registry: cannot fetch writer schema {schema_id}: {e}") from e
            if e.status == 404:
                err = SerializationError(f"schema id {schema_id} is not known to the registry ({e.message})",
                                         offset=1, schema_id=schema_id)
                err.__cause__ = e
                self._decoder.unknown_ids[schema_id] = err
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class JsonBatchDecoder(_RowwiseDecoder):
    def __init__(self, spec: ReaderSpec, client: RegistryClient, options: str) -> None:
        super().__init__(spec, client, options)
        validate = bool(self.options.get("validate", False))
        reader = Schema(spec.reader, "JSON") if validate else None
        self.deserialize = JsonSchemaDeserializer(_CachedClient(self), reader, validate=validate)  # type: ignore
        self.convert = json_converter(json.loads(spec.reader))


class ProtobufBatchDecoder(_RowwiseDecoder):
    def __init__(self, spec: ReaderSpec, client: RegistryClient, options: str) -> None:
        super().__init__(spec, client, options)
        pool = descriptor_pool.DescriptorPool()
        for fdp in descriptor_pb2.FileDescriptorSet.FromString(spec.descriptors).file:
            pool.Add(fdp)
        self.desc = pool.FindMessageTypeByName(spec.reader)
        self.deserialize = ProtobufDeserializer(_CachedClient(self), GetMessageClass(self.desc))  # type: ignore
        self.convert = None  # rows stay messages; _to_arrow builds the columns
        self.row_converter = protobuf_converter(self.desc)
        self._parse = GetMessageClass(self.desc).FromString
        self._known: set[bytes] = set()  # 6-byte headers (id + index [0]) the deserializer has accepted

    def decode_rows(self, values: pa.Array, out: _Rows) -> None:
        # The deserializer checks frame, id and index path; once a header has passed, its rows are parsed
        # directly (the per-call wrapper cost as much as the parse itself).
        if self._known and not values.null_count and self._decode_known(values, out):
            return
        deserialize = self.deserialize
        parse = self._parse
        known = self._known
        rows = out.rows
        for i, data in enumerate(values.to_pylist()):
            if data is None:
                continue
            if data[:6] in known:
                try:
                    rows[i] = parse(data[6:])
                    continue
                except Exception:  # the deserializer below reports it with the frame details
                    pass
            try:
                rows[i] = deserialize(data)
            except SerializationError as e:
                out.fail(i, e.schema_id, str(e))
                continue
            if data[5] == 0:
                known.add(data[:6])

    def _decode_known(self, values: pa.Array, out: _Rows) -> bool:
        """The common batch: every row framed with one header the deserializer already accepted. The headers are
        compared with numpy and the bodies sliced from the one data buffer (no per-row ``bytes`` of the frame, no
        set lookup). On anything else (or a body that does not parse) it returns False and the loop redoes it."""
        if not pa.types.is_binary(values.type):
            return False
        n = len(values)
        offsets = np.frombuffer(values.buffers()[1], dtype=np.int32, count=n + 1, offset=values.offset * 4)
        starts = offsets[:-1]
        ends = offsets[1:]
        if ((ends - starts) < 6).any():
            return False
        data_buf = values.buffers()[2]
        data = data_buf.to_pybytes() if data_buf is not None else b""
        buf = np.frombuffer(data, dtype=np.uint8)
        heads = buf[starts[:, None] + np.arange(6, dtype=np.int32)]
        if not (heads == heads[0]).all() or heads[0].tobytes() not in self._known:
            return False
        try:
            out.rows = list(map(self._parse, map(data.__getitem__, map(slice, (starts + 6).tolist(), ends.tolist()))))
        except Exception:  # a bad body: the row-wise loop reports it with the frame details
            return False
        return True

    def _to_arrow(self, out: _Rows) -> pa.Array:
        rows = out.rows
        present = [i for i, m in enumerate(rows) if m is not None]
        try:
            arr = messages_to_arrow([rows[i] for i in present], self.desc, self.arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            # not expected for parsed messages; the row-wise path finds and reports the offending row
            for i in present:
                rows[i] = self.row_converter(rows[i])
            return super()._to_arrow(out)
        if len(present) == len(rows):
            return arr
        positions: list[int | None] = [None] * len(rows)
        for k, i in enumerate(present):
            positions[i] = k
        return pc.take(arr, pa.array(positions, pa.int32()))
