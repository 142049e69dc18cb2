"""The public API of every package root, pinned: what users may import is changed on purpose, here too.

A name added to or dropped from a package's ``__all__`` fails this test until the list below says so; every
listed name must resolve (the package roots load their modules lazily, so a typo would otherwise hide).
"""

from __future__ import annotations

import importlib

import pytest

PUBLIC_API: dict[str, str] = {  # package -> its names, space-separated
    "registry": "ApiError DEFAULTS ErrorCode Mode RegistryApp RegistryConfig StartupError build_app serve",
    "compat": (
        "CheckLimitError CompatibilityLevel CompatibilityPolicy Incompatibility LevelResult SchemaTooComplexError "
        "SchemaTooDeepError check_levels"
    ),
    "schemakit": "main",
    "serdes": (
        "AssociatedNameStrategy AsyncAvroDeserializer AsyncAvroSerializer AsyncJsonSchemaDeserializer "
        "AsyncJsonSchemaSerializer "
        "AsyncProtobufDeserializer AsyncProtobufSerializer AsyncRegistryClient AvroDeserializer AvroSerde "
        "AvroSerializer BearerAuth CustomBearerAuth DecimalSpec JsonSchemaDeserializer JsonSchemaSerde "
        "JsonSchemaSerializer MessageField Metadata OAuthClientCredentials OAuthTokenError ProtobufDeserializer "
        "ProtobufSerde ProtobufSerializer RegisteredSchema RegistryClient RegistryError RegistryUnavailableError "
        "Rule RuleError RuleSet Schema SchemaReference Serde SerializationContext SerializationError avro_schema "
        "json_schema record_fullname record_subject_name_strategy topic_record_subject_name_strategy "
        "topic_subject_name_strategy wire"
    ),
    "serdes.spark": (
        "DecodeFailure SchemaMappingError avro_to_spark from_registry jar_path json_schema_to_spark "
        "protobuf_to_spark register spark_session to_registry with_jar"
    ),
    "streams": (
        "BYTES BufferConfig Cancellable CoPartitioningError ConsumedRecord DeadLetterQueue DeserializationError "
        "EmitStrategy ErrorHandler FLOAT FailOnInvalidTimestamp GlobalKTable HostInfo INT InvalidStateStoreError "
        "JSON JoinWindows KGroupedStream KGroupedTable KStream KTable KeyQueryMetadata LogAndContinue LogAndFail "
        "LogAndSkipOnInvalidTimestamp MissingTopicError ProcessingError Processor ProcessorContext "
        "ProductionError PunctuationType STRING Serde SerdeError SessionStoreSpec SessionWindow "
        "SessionWindowedKStream SessionWindowedSerde SessionWindows SlidingWindows StateListener StateStoreError "
        "StoreSpec StreamsApp StreamsBuilder StreamsError StreamsMetadata Suppressed TaskState TestInputTopic "
        "TestOutputTopic TestRecord TimeWindow TimeWindowedKStream TimeWindowedSerde TimeWindows Topology "
        "TopologyError TopologyTestDriver UsePartitionTimeOnInvalidTimestamp VersionedRecord VersionedStoreSpec "
        "WallclockTimestampExtractor "
        "WindowStoreSpec Windowed WindowedSerdes"
    ),
    "streams.log": (
        "BACKENDS Capabilities Consumer DeliveryCallback GroupSettings Lease Log LogError LogTimeoutError "
        "OFFSET_BEGINNING OFFSET_END Producer ProducerFencedError Record RecordColumns RecordMetadata "
        "RecordTooLargeError StorageError StorageFullError TopicConfigError TopicExistsError TopicInfo TopicPartition "
        "TransactionError TransactionState UnknownTopicError open_log redact_url"
    ),
}


@pytest.mark.parametrize("package", sorted(PUBLIC_API))
def test_public_api_is_what_it_was_agreed_to_be(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(PUBLIC_API[package].split())
    assert len(set(module.__all__)) == len(module.__all__), f"{package}.__all__ lists a name twice"
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == [], f"{package}.__all__ names what it does not have: {missing}"
