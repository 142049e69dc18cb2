"""Typed records: dataclasses and pydantic models as Avro and JSON Schema, and the converters both ways.

The parts: ``introspection`` (a class's fields and type hints, record names), ``avro_mapping`` and
``json_mapping`` (the schemas), ``codecs`` (objects <-> the dicts fastavro and orjson take). The names users
import are re-exported here.

Mapping (Python type -> Avro / JSON Schema):

=====================  ========================================  ========================================
str / int / float      string / long / double                    string / integer / number
bool / bytes           boolean / bytes                           boolean / string (base64)
X | None               ["null", X], default null when defaulted  anyOf [null, X]
enum.Enum              enum (symbols = member names)             string with enum = member names
dataclass / model      record (named once, then by full name)    object in ``definitions``, ``$ref``
list[X] / tuple / set  array                                     array
dict[str, X]           map                                       object with additionalProperties
datetime               long timestamp-micros (read back as UTC)  string, format date-time
date / time            int date / long time-micros               string, format date / time
Decimal                bytes decimal (``Annotated[Decimal,       string (exact)
                       DecimalSpec(p, s)]``; default 38, 9)
uuid.UUID              string uuid                               string, format uuid
=====================  ========================================  ========================================

Record names: ``__avro_name__`` / ``__avro_namespace__`` on the class override the class name and module.
Everything is computed once per class and cached.
"""

from serdes.typed_records.avro_mapping import DecimalSpec, avro_named_schema, avro_schema
from serdes.typed_records.codecs import avro_decoder, avro_encoder, json_decoder, json_encoder
from serdes.typed_records.introspection import is_record_type, record_fullname
from serdes.typed_records.json_mapping import json_schema

__all__ = [
    "DecimalSpec",
    "avro_decoder",
    "avro_encoder",
    "avro_named_schema",
    "avro_schema",
    "is_record_type",
    "json_decoder",
    "json_encoder",
    "json_schema",
    "record_fullname",
]
