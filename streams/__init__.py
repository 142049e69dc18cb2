"""schemakit streams: a Kafka-Streams-style runtime over ``streams.log`` (SQLite or Kafka).

    from streams import StreamsBuilder, StreamsApp
    b = StreamsBuilder()
    b.stream("text", key=str, value=str).flat_map_values(str.split).group_by(lambda k, w: w, key=str) \\
        .count(store="counts").to_stream().to("word-counts", key=str, value=int)
    app = StreamsApp(b.build(), application_id="wordcount", log="sqlite:///./data")
    app.run()
"""

from streams.builder import StreamsBuilder
from streams.dsl import KGroupedStream, KStream, KTable
from streams.errors import (
    CoPartitioningError,
    DeserializationError,
    InvalidStateStoreError,
    MissingTopicError,
    ProcessingError,
    SerdeError,
    StateStoreError,
    StreamsError,
    TopologyError,
)
from streams.handlers import DeadLetterQueue, LogAndContinue, LogAndFail
from streams.processor import Cancellable, Processor, ProcessorContext, PunctuationType
from streams.serdes import BYTES, FLOAT, INT, JSON, STRING, Serde
from streams.test_driver import TestInputTopic, TestOutputTopic, TestRecord, TopologyTestDriver
from streams.topology import StoreSpec, Topology


def __getattr__(name: str) -> object:
    # The app pulls in the log backends; import it only when asked for.
    if name == "StreamsApp":
        from streams.app import StreamsApp

        return StreamsApp
    raise AttributeError(f"module 'streams' has no attribute {name!r}")


__all__ = [
    "BYTES",
    "FLOAT",
    "INT",
    "JSON",
    "STRING",
    "Cancellable",
    "CoPartitioningError",
    "DeadLetterQueue",
    "DeserializationError",
    "InvalidStateStoreError",
    "KGroupedStream",
    "KStream",
    "KTable",
    "LogAndContinue",
    "LogAndFail",
    "MissingTopicError",
    "ProcessingError",
    "Processor",
    "ProcessorContext",
    "PunctuationType",
    "Serde",
    "SerdeError",
    "StateStoreError",
    "StoreSpec",
    "StreamsApp",
    "StreamsBuilder",
    "StreamsError",
    "TestInputTopic",
    "TestOutputTopic",
    "TestRecord",
    "Topology",
    "TopologyError",
    "TopologyTestDriver",
]
