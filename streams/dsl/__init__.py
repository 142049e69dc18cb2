"""The DSL: ``KStream`` (a record stream), ``KTable`` (latest value per key), ``KGroupedStream`` and
``KGroupedTable`` (ready to aggregate), and the windowed ``TimeWindowedKStream`` / ``SessionWindowedKStream``.

One module per class family: ``kstream`` (``KStreamBase``), ``ktable`` (``KTableBase``), ``grouped_stream``,
``windowed_stream``, ``grouped_table``; ``base`` holds what the DSL needs of its builder and ``AbstractStream``
(a node and its serdes: what the classes are made of), ``aggregation`` what the aggregations share. The
families make one another (a stream is grouped into a table, a table streamed), so their modules are kept in
one direction: a family's own operations return ``Self``, the grouped and windowed families are generic in
the table class they make, and ``api`` defines ``KStream`` and ``KTable`` with the operations that leave their
family (``group_by``, ``to_stream``).

Serdes follow the data: an operation that keeps keys and values as they are (filter, peek, branch,
merge, group_by_key) keeps the serdes; one that computes new ones (map, map_values, ...) drops them, and
the topology's defaults (JSON) apply unless the next sink or store names one. A key-changing operation
(map, flat_map, select_key, group_by) marks the stream so that the next stateful operation reads it
through a repartition topic ``<application_id>-<name>-repartition``. A windowed aggregation's table is
keyed by ``Windowed(key, window)`` and carries the windowed key serde (Kafka Streams' byte layout).
"""

from streams.dsl.api import KStream, KTable
from streams.dsl.grouped_stream import KGroupedStream
from streams.dsl.grouped_table import KGroupedTable
from streams.dsl.windowed_stream import SessionWindowedKStream, TimeWindowedKStream

__all__ = ["KGroupedStream", "KGroupedTable", "KStream", "KTable", "SessionWindowedKStream", "TimeWindowedKStream"]
