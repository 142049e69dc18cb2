"""schemakit streams: a Kafka-Streams-style runtime over ``streams.log`` (SQLite or Kafka).

    from streams import StreamsBuilder, StreamsApp
    b = StreamsBuilder()
    b.stream("text", key=str, value=str).flat_map_values(str.split).group_by(lambda k, w: w, key=str) \\
        .count(store="counts").to_stream().to("word-counts", key=str, value=int)
    app = StreamsApp(b.build(), application_id="wordcount", log="sqlite:///./data")
    app.run()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Public name -> the module that defines it. Nothing is imported until a name is used, so that
# ``import streams.log`` (what the registry stands on) loads none of the runtime.
_EXPORTS: dict[str, str] = {
    "StreamsBuilder": "streams.builder",
    "StreamsApp": "streams.app",
    "GlobalKTable": "streams.global_table",
    "KStream": "streams.dsl.api",
    "KGroupedStream": "streams.dsl.grouped_stream",
    **dict.fromkeys(["SessionWindowedKStream", "TimeWindowedKStream"], "streams.dsl.windowed_stream"),
    "KTable": "streams.dsl.api",
    "KGroupedTable": "streams.dsl.grouped_table",
    **dict.fromkeys(
        [
            "ConsumedRecord",
            "FailOnInvalidTimestamp",
            "LogAndSkipOnInvalidTimestamp",
            "UsePartitionTimeOnInvalidTimestamp",
            "WallclockTimestampExtractor",
        ],
        "streams.extractors",
    ),
    **dict.fromkeys(
        ["EmitStrategy", "SessionWindow", "SessionWindows", "SlidingWindows", "TimeWindow", "TimeWindows", "Windowed"],
        "streams.windows",
    ),
    "JoinWindows": "streams.join_windows",
    **dict.fromkeys(["BufferConfig", "Suppressed"], "streams.suppress"),
    **dict.fromkeys(["SessionWindowedSerde", "TimeWindowedSerde", "WindowedSerdes"], "streams.windowed_serdes"),
    **dict.fromkeys(
        [
            "CoPartitioningError",
            "DeserializationError",
            "InvalidStateStoreError",
            "MissingTopicError",
            "ProcessingError",
            "ProductionError",
            "SerdeError",
            "StateStoreError",
            "StreamsError",
            "TopologyError",
        ],
        "streams.errors",
    ),
    **dict.fromkeys(["DeadLetterQueue", "ErrorHandler", "LogAndContinue", "LogAndFail"], "streams.handlers"),
    **dict.fromkeys(["StateListener", "TaskState"], "streams.listeners"),
    **dict.fromkeys(["Cancellable", "Processor", "ProcessorContext", "PunctuationType"], "streams.processor"),
    **dict.fromkeys(["HostInfo", "KeyQueryMetadata", "StreamsMetadata"], "streams.queries"),
    **dict.fromkeys(["BYTES", "FLOAT", "INT", "JSON", "STRING", "Serde"], "streams.record_serdes"),
    **dict.fromkeys(["TestInputTopic", "TestOutputTopic", "TestRecord", "TopologyTestDriver"], "streams.testing"),
    **dict.fromkeys(
        ["SessionStoreSpec", "StoreSpec", "Topology", "VersionedStoreSpec", "WindowStoreSpec"], "streams.topology"
    ),
    "VersionedRecord": "streams.state.versioned",
}

if TYPE_CHECKING:
    from streams.app import StreamsApp
    from streams.builder import StreamsBuilder
    from streams.dsl.api import KStream, KTable
    from streams.dsl.grouped_stream import KGroupedStream
    from streams.dsl.grouped_table import KGroupedTable
    from streams.dsl.windowed_stream import SessionWindowedKStream, TimeWindowedKStream
    from streams.errors import (
        CoPartitioningError,
        DeserializationError,
        InvalidStateStoreError,
        MissingTopicError,
        ProcessingError,
        ProductionError,
        SerdeError,
        StateStoreError,
        StreamsError,
        TopologyError,
    )
    from streams.extractors import (
        ConsumedRecord,
        FailOnInvalidTimestamp,
        LogAndSkipOnInvalidTimestamp,
        UsePartitionTimeOnInvalidTimestamp,
        WallclockTimestampExtractor,
    )
    from streams.global_table import GlobalKTable
    from streams.handlers import DeadLetterQueue, ErrorHandler, LogAndContinue, LogAndFail
    from streams.join_windows import JoinWindows
    from streams.listeners import StateListener, TaskState
    from streams.processor import Cancellable, Processor, ProcessorContext, PunctuationType
    from streams.queries import HostInfo, KeyQueryMetadata, StreamsMetadata
    from streams.record_serdes import BYTES, FLOAT, INT, JSON, STRING, Serde
    from streams.state.versioned import VersionedRecord
    from streams.suppress import BufferConfig, Suppressed
    from streams.testing import TestInputTopic, TestOutputTopic, TestRecord, TopologyTestDriver
    from streams.topology import SessionStoreSpec, StoreSpec, Topology, VersionedStoreSpec, WindowStoreSpec
    from streams.windowed_serdes import SessionWindowedSerde, TimeWindowedSerde, WindowedSerdes
    from streams.windows import (
        EmitStrategy,
        SessionWindow,
        SessionWindows,
        SlidingWindows,
        TimeWindow,
        TimeWindows,
        Windowed,
    )


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'streams' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "BYTES",
    "FLOAT",
    "INT",
    "JSON",
    "STRING",
    "BufferConfig",
    "Cancellable",
    "CoPartitioningError",
    "ConsumedRecord",
    "DeadLetterQueue",
    "DeserializationError",
    "EmitStrategy",
    "ErrorHandler",
    "FailOnInvalidTimestamp",
    "GlobalKTable",
    "HostInfo",
    "InvalidStateStoreError",
    "JoinWindows",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "KeyQueryMetadata",
    "LogAndContinue",
    "LogAndFail",
    "LogAndSkipOnInvalidTimestamp",
    "MissingTopicError",
    "ProcessingError",
    "Processor",
    "ProcessorContext",
    "ProductionError",
    "PunctuationType",
    "Serde",
    "SerdeError",
    "SessionStoreSpec",
    "SessionWindow",
    "SessionWindowedKStream",
    "SessionWindowedSerde",
    "SessionWindows",
    "SlidingWindows",
    "StateListener",
    "StateStoreError",
    "StoreSpec",
    "StreamsApp",
    "StreamsBuilder",
    "StreamsError",
    "StreamsMetadata",
    "Suppressed",
    "TaskState",
    "TestInputTopic",
    "TestOutputTopic",
    "TestRecord",
    "TimeWindow",
    "TimeWindowedKStream",
    "TimeWindowedSerde",
    "TimeWindows",
    "Topology",
    "TopologyError",
    "TopologyTestDriver",
    "UsePartitionTimeOnInvalidTimestamp",
    "VersionedRecord",
    "VersionedStoreSpec",
    "WallclockTimestampExtractor",
    "WindowStoreSpec",
    "Windowed",
    "WindowedSerdes",
]
