"""The embedded backend: the whole log in one SQLite file (WAL mode, ``synchronous=FULL``), or in memory.

Split by the client each module implements, as Kafka's clients are:

- ``connection``: the database a URL names (a file, or ``sqlite:///:memory:[name]``), its tables, the shared
  connection and its write transaction, header encoding, SQLite's errors as the log's own;
- ``log``: ``SqliteLog``, topics, end and group offsets, compaction;
- ``producer``: ``SqliteProducer``, buffered sends and transactions;
- ``consumer``: ``SqliteConsumer``, assignment, subscription, polling;
- ``lease``: ``SqliteLease``, ``Log.lease`` as an expiring row.
"""

from __future__ import annotations

from streams.log.sqlite.connection import path_from_url
from streams.log.sqlite.consumer import SqliteConsumer
from streams.log.sqlite.lease import SqliteLease
from streams.log.sqlite.log import SqliteLog
from streams.log.sqlite.producer import SqliteProducer

__all__ = ["SqliteConsumer", "SqliteLease", "SqliteLog", "SqliteProducer", "path_from_url"]
