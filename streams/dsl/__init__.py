"""The DSL: ``KStream`` (a record stream), ``KTable`` (latest value per key), ``KGroupedStream`` and
``KGroupedTable`` (ready to aggregate), and the windowed ``TimeWindowedKStream`` / ``SessionWindowedKStream``.

One module per class family: ``kstream``, ``grouped_stream``, ``windowed_stream``, ``ktable``,
``grouped_table``; ``base`` holds what the DSL needs of its builder and ``AbstractStream`` (a node and its
serdes: what the four classes are made of), ``aggregation`` what the aggregations share. ``ktable`` is
imported by the others and imports ``KStream`` and ``KGroupedTable`` only inside the methods that return
them, so the modules import each other in one direction.

Serdes follow the data: an operation that keeps keys and values as they are (filter, peek, branch,
merge, group_by_key) keeps the serdes; one that computes new ones (map, map_values, ...) drops them, and
the topology's defaults (JSON) apply unless the next sink or store names one. A key-changing operation
(map, flat_map, select_key, group_by) marks the stream so that the next stateful operation reads it
through a repartition topic ``<application_id>-<name>-repartition``. A windowed aggregation's table is
keyed by ``Windowed(key, window)`` and carries the windowed key serde (Kafka Streams' byte layout).
"""

from streams.dsl.grouped_stream import KGroupedStream
from streams.dsl.grouped_table import KGroupedTable
from streams.dsl.kstream import KStream
from streams.dsl.ktable import KTable
from streams.dsl.windowed_stream import SessionWindowedKStream, TimeWindowedKStream

__all__ = ["KGroupedStream", "KGroupedTable", "KStream", "KTable", "SessionWindowedKStream", "TimeWindowedKStream"]
