"""``from_registry`` / ``to_registry``: the Column functions users call.

Both return a ``pyspark.sql.Column`` usable anywhere a column is (``select``, ``withColumn``, ``where``,
streaming queries). Decoding runs in one of two engines:

* ``engine="jvm"``: a Catalyst expression from the project's jar (``jar_path()``), built on the driver with the
  reader schema(s) and registry options; executors fetch writer schemas by id over HTTP into a per-JVM cache
  and read Avro binary straight into Spark's internal rows (``jvm_engine.py``). Avro only.
* ``engine="python"``: an Arrow UDF (``pyspark.sql.functions.arrow_udf``, Spark >= 4.1) that gets a whole
  Arrow batch (``spark.sql.execution.arrow.maxRecordsPerBatch`` rows) per call and returns a struct array
  (``python_engine.py``). An Arrow UDF rather than ``mapInArrow`` because it is a Column (``mapInArrow`` is a
  DataFrame-to-DataFrame API and cannot be used inside ``select``); rather than ``pandas_udf`` because that
  cannot return a null struct.
* ``engine="auto"`` (default): JVM for Avro when the session's JVM can load the jar's class (and the registry
  options need no Python callback), else Python.

On a Spark Connect session the Python engine's Arrow UDFs go to the server like any Python UDF; the JVM engine
runs when the server was started with the jar and its plugin (``jvm_connect.py``), and otherwise
``engine="auto"`` logs one line saying why and uses Python, and ``engine="jvm"`` fails with that reason.

``registry`` is a URL or confluent-kafka's registry client configuration dict (auth, TLS): ``registry_options.py``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, DataType

from serdes.spark import jvm_engine
from serdes.spark.encode import encode_batch, encoder_spec
from serdes.spark.python_engine import decode_batch
from serdes.spark.reader import ReaderSpec, RecordTypesSpec, resolve_reader, resolve_record_types
from serdes.spark.registry_options import RegistryOptions
from serdes.spark.types import result_type

__all__ = ["from_registry", "to_registry"]

log = logging.getLogger(__name__)

MODES = ("PERMISSIVE", "FAILFAST")
ENGINES = ("auto", "jvm", "python")


def _column(col: str | Column) -> Column:
    return F.col(col) if isinstance(col, str) else col


def _session() -> SparkSession:
    spark = SparkSession.getActiveSession()
    if spark is None:
        raise RuntimeError(
            "from_registry/to_registry need an active SparkSession (build one first, e.g. with "
            "serdes.spark.spark_session())"
        )
    return spark


def from_registry(
    col: str | Column,
    registry: str | Mapping[str, Any],
    *,
    subject: str | None = None,
    version: int | str | None = None,
    reader_schema: Any = None,
    schema_type: str | None = None,
    message: str | None = None,
    subjects: Sequence[str] | Mapping[str, str] | None = None,
    mode: str = "PERMISSIVE",
    error_column: bool = False,
    writer_id_column: bool = False,
    engine: str = "auto",
    validate: bool = False,
    rule_config: Mapping[str, str] | None = None,
) -> Column:
    """Decode a binary column of Confluent-framed payloads into a struct column.

    Args:
        col: the binary column (name or Column), e.g. Kafka's ``value``.
        registry: registry URL(s), comma-separated (``http://user:pass@host`` for basic auth), or
            confluent-kafka's ``SchemaRegistryClient`` configuration dict (``url``, ``basic.auth.user.info``,
            ``bearer.auth.*`` for a static token or OAuth client credentials, ``ssl.ca.location``,
            ``ssl.certificate.location``, ``ssl.key.location``, ``ssl.key.password``, ...), used by both engines.
        subject / version: the reader schema is this version of the subject (default: latest).
        reader_schema: pin the reader schema instead: Avro or JSON Schema text/dict, a ``serdes.Schema``, or a
            generated Protobuf message class. ``schema_type`` says AVRO or JSON for text (default: the
            subject's type, else AVRO).
        message: Protobuf message to read (full name), default the schema's first message.
        subjects: a topic mixing Avro record types (TopicRecordNameStrategy: a subject per type): the subjects
            (their latest versions are the readers), as a list or as ``{field name: subject}``. The column is
            ``struct<Type1: ..., Type2: ...>``, one field per record type (named by the record's name without
            namespace, or by the dict's keys) with only the row's type set; ``.select("col.*")`` makes them
            separate columns. The writer schema's record name picks the type.
        mode: ``"PERMISSIVE"`` (bad frame, unknown id or undecodable payload -> null) or ``"FAILFAST"``
            (the query fails, naming the row's schema id and the reason).
        error_column: add the reason for rows that could not be decoded (PERMISSIVE): the column becomes
            ``struct<value: <decoded>, error: string, ...>``.
        writer_id_column: add the writer schema id (from the frame) and its version under ``subject`` (the
            type's subject with ``subjects=``; null when the id is not registered there or no subject was given):
            ``struct<value: <decoded>, [error,] writer_id: int, writer_version: int>``.
        engine: ``"auto"``, ``"jvm"`` (Avro, needs the jar on the session) or ``"python"``.
        validate: JSON Schema only: validate each document against the reader schema (slower).
        rule_config: settings of the subject's encryption rules, as serdes' ``rule_config`` (the local KMS
            ``secret``, a cloud KMS's credentials): with ``subject=``, fields (or payloads) encrypted by an
            ``ENCRYPT`` / ``ENCRYPT_PAYLOAD`` rule of the subject's version are decrypted by the Python engine.
            The JVM engine does not decrypt: ``engine="auto"`` picks Python for such a subject, and
            ``engine="jvm"`` refuses it.

    Each row is decoded with the writer schema named by its frame and resolved to the reader schema, so a
    column mixing versions of the subject gives one type. Null in, null out. A registry that cannot be reached
    (connection errors, 5xx) fails the task in both modes: that is not a property of the row.
    """
    mode = mode.upper()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    options = RegistryOptions(registry)
    spec: ReaderSpec | RecordTypesSpec
    if subjects is not None:
        if subject is not None or reader_schema is not None or version is not None:
            raise ValueError(
                "from_registry takes subjects= (a topic mixing record types) or subject=/version=/"
                "reader_schema=, not both"
            )
        spec = resolve_record_types(options, subjects)
    else:
        spec = resolve_reader(
            options,
            subject=subject,
            version=version,
            reader_schema=reader_schema,
            schema_type=schema_type,
            message=message,
        )
    if engine == "jvm" and spec.kind != "AVRO":
        raise ValueError(
            f"the JVM engine decodes Avro only; this reader schema is {spec.kind} (use engine='python' or 'auto')"
        )
    encrypted = any(s.encrypted for s in (spec.branches if isinstance(spec, RecordTypesSpec) else [spec]))
    if engine == "jvm" and encrypted:
        raise ValueError(
            "the JVM engine does not decrypt, and this subject's schema has encryption rules (ENCRYPT / "
            "ENCRYPT_PAYLOAD): use engine='python' or 'auto'"
        )
    if engine == "jvm" and options.python_only:
        raise ValueError(
            f"the JVM engine cannot use these registry options ({options.python_only}): use engine='python' or 'auto'"
        )
    if engine != "python" and spec.kind == "AVRO" and not options.python_only and not encrypted:
        spark = _session()
        reason = jvm_engine.unavailable_reason(spark)
        if reason is None:
            return jvm_engine.decode_column(spark, _column(col), spec, mode, error_column, writer_id_column)
        if engine == "jvm":
            raise RuntimeError(f"from_registry cannot use engine='jvm': {reason}; use engine='python' or 'auto'")
        if jvm_engine.is_connect(spark):  # (a classic session without the jar is the documented default: no log)
            log.warning(
                "from_registry uses the Python engine (engine='auto'; pass engine='python' to say so): %s", reason
            )
    engine_options: dict[str, Any] = {"validate": True} if validate else {}
    if rule_config:
        engine_options["rule_config"] = dict(rule_config)
    return python_column(
        col, spec, mode, error_column, writer_id_column, json.dumps(engine_options) if engine_options else ""
    )


def python_column(
    col: str | Column,
    spec: ReaderSpec | RecordTypesSpec,
    mode: str,
    error_column: bool,
    writer_id_column: bool = False,
    options: str = "",
) -> Column:
    """The Python engine's Column: an Arrow UDF over batches of the binary column."""

    def decode(values: pa.Array) -> pa.Array:
        return decode_batch(spec, mode, error_column, writer_id_column, options, values)

    return _arrow_column(decode, "from_registry", result_type(spec.spark_type, error_column, writer_id_column), col)


def _arrow_column(
    batch_fn: Callable[[pa.Array], pa.Array], name: str, return_type: DataType, col: str | Column
) -> Column:
    """``batch_fn`` as a scalar Arrow UDF (inferred from its type hints) applied to ``col``, named ``name(col)``."""
    batch_fn.__name__ = name
    # pyspark's overloads only cover passing functionType, the form it deprecates in favour of type hints
    udf = F.arrow_udf(batch_fn, return_type)  # type: ignore[call-overload]
    return udf(_column(col))


def to_registry(
    col: str | Column,
    registry: str | Mapping[str, Any],
    *,
    subject: str,
    version: int | str | None = None,
    schema: Any = None,
    schema_type: str | None = None,
    auto_register: bool = False,
    message: str | None = None,
    mode: str = "FAILFAST",
    validate: bool = True,
) -> Column:
    """Encode a struct column into Confluent-framed payloads (a binary column).

    The writer schema is ``schema`` (Avro / JSON Schema text or dict, ``serdes.Schema``, or a generated Protobuf
    message class) registered under ``subject`` when ``auto_register=True`` (else it must already be
    registered there), or the subject's ``version`` (default: latest). Struct fields are matched to schema
    fields by name; JSON documents are validated against the schema first (``validate=False`` skips that, as
    confluent-kafka's ``validate`` setting does). Null in, null out. A row that does not fit the schema fails the
    query naming the row and the field (``mode="FAILFAST"``, the default) or is encoded as null
    (``mode="PERMISSIVE"``). ``registry`` is a URL or confluent-kafka's client configuration, as for
    ``from_registry``; only the driver calls the registry.
    """
    mode = mode.upper()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    spec = encoder_spec(
        RegistryOptions(registry),
        subject=subject,
        version=version,
        schema=schema,
        schema_type=schema_type,
        auto_register=auto_register,
        message=message,
        validate=validate,
    )

    def encode(values: pa.Array) -> pa.Array:
        return encode_batch(spec, mode, values)

    return _arrow_column(encode, "to_registry", BinaryType(), col)
