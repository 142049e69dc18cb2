"""schemakit serdes: the registry client, the Confluent wire format, and Avro / Protobuf / JSON Schema
serializers and deserializers that plug into confluent-kafka producers and consumers.

    from serdes import RegistryClient, AvroSerializer, AvroDeserializer
    client = RegistryClient("http://localhost:8081")
    ser = AvroSerializer(client, Order)          # Order: a dataclass, or an Avro schema string/dict
    de = AvroDeserializer(client, Order)         # returns Order instances (dicts with no type)
    payload = ser(order, SerializationContext("orders", MessageField.VALUE))
"""

from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import wire
from serdes.avro import AvroDeserializer, AvroSerializer
from serdes.client import RegistryClient
from serdes.errors import RegistryError, RegistryUnavailableError, SerializationError
from serdes.json_serdes import JsonSchemaDeserializer, JsonSchemaSerializer
from serdes.models import RegisteredSchema, Schema, SchemaReference
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer
from serdes.serde import AvroSerde, JsonSchemaSerde, ProtobufSerde, Serde
from serdes.strategies import (
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)
from serdes.typed_records import DecimalSpec, avro_schema, json_schema, record_fullname

__all__ = [
    "AvroDeserializer",
    "AvroSerde",
    "AvroSerializer",
    "DecimalSpec",
    "JsonSchemaDeserializer",
    "JsonSchemaSerde",
    "JsonSchemaSerializer",
    "MessageField",
    "ProtobufDeserializer",
    "ProtobufSerde",
    "ProtobufSerializer",
    "RegisteredSchema",
    "RegistryClient",
    "RegistryError",
    "RegistryUnavailableError",
    "Schema",
    "SchemaReference",
    "Serde",
    "SerializationContext",
    "SerializationError",
    "avro_schema",
    "json_schema",
    "record_fullname",
    "record_subject_name_strategy",
    "topic_record_subject_name_strategy",
    "topic_subject_name_strategy",
    "wire",
]
