"""The Kafka backend of the log: confluent-kafka's Producer, Consumer and AdminClient behind ``base.py``.

Split by the client each module implements, as Kafka's own clients are:

- ``connection``: the ``kafka://`` URL and its librdkafka settings routed to each client, librdkafka's errors
  as the log's own, ``TopicPartition`` conversions;
- ``log``: ``KafkaLog``, the admin side: topics, end and group offsets, the clients it opens;
- ``producer``: ``KafkaProducer``;
- ``consumer``: ``KafkaConsumer``.

Its lease (``KafkaLog.lease``) is ``streams.log.lease.GroupLease``, written against any log with group
membership. This package imports confluent-kafka, so ``streams.log.open_log`` imports it only for a
``kafka://`` URL.
"""

from __future__ import annotations

from streams.log.kafka.connection import parse_kafka_url
from streams.log.kafka.consumer import KafkaConsumer
from streams.log.kafka.log import KafkaLog
from streams.log.kafka.producer import KafkaProducer

__all__ = ["KafkaConsumer", "KafkaLog", "KafkaProducer", "parse_kafka_url"]
