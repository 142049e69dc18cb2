"""schemakit serdes: the registry client, the Confluent wire format, and Avro / Protobuf / JSON Schema
serializers and deserializers that plug into confluent-kafka producers and consumers.

    from serdes import RegistryClient, AvroSerializer, AvroDeserializer
    client = RegistryClient("http://localhost:8081")
    ser = AvroSerializer(client, Order)          # Order: a dataclass, or an Avro schema string/dict
    de = AvroDeserializer(client, Order)         # returns Order instances (dicts with no type)
    payload = ser(order, SerializationContext("orders", MessageField.VALUE))

asyncio: ``AsyncRegistryClient`` and ``AsyncAvroSerializer`` & co. take the same arguments and write the same bytes.
"""

from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import wire
from serdes.async_client import AsyncRegistryClient
from serdes.auth import BearerAuth, CustomBearerAuth, OAuthClientCredentials
from serdes.avro import AsyncAvroDeserializer, AsyncAvroSerializer, AvroDeserializer, AvroSerializer
from serdes.client import RegistryClient
from serdes.errors import OAuthTokenError, RegistryError, RegistryUnavailableError, RuleError, SerializationError
from serdes.json_serdes import (
    AsyncJsonSchemaDeserializer,
    AsyncJsonSchemaSerializer,
    JsonSchemaDeserializer,
    JsonSchemaSerializer,
)
from serdes.models import Metadata, RegisteredSchema, Rule, RuleSet, Schema, SchemaReference
from serdes.protobuf import AsyncProtobufDeserializer, AsyncProtobufSerializer, ProtobufDeserializer, ProtobufSerializer
from serdes.serde import AvroSerde, JsonSchemaSerde, ProtobufSerde, Serde
from serdes.strategies import (
    AssociatedNameStrategy,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
    topic_subject_name_strategy,
)
from serdes.typed_records import DecimalSpec, avro_schema, json_schema, record_fullname

__all__ = [
    "AssociatedNameStrategy",
    "AsyncAvroDeserializer",
    "AsyncAvroSerializer",
    "AsyncJsonSchemaDeserializer",
    "AsyncJsonSchemaSerializer",
    "AsyncProtobufDeserializer",
    "AsyncProtobufSerializer",
    "AsyncRegistryClient",
    "AvroDeserializer",
    "AvroSerde",
    "AvroSerializer",
    "BearerAuth",
    "CustomBearerAuth",
    "DecimalSpec",
    "JsonSchemaDeserializer",
    "JsonSchemaSerde",
    "JsonSchemaSerializer",
    "MessageField",
    "Metadata",
    "OAuthClientCredentials",
    "OAuthTokenError",
    "ProtobufDeserializer",
    "ProtobufSerde",
    "ProtobufSerializer",
    "RegisteredSchema",
    "RegistryClient",
    "RegistryError",
    "RegistryUnavailableError",
    "Rule",
    "RuleError",
    "RuleSet",
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
