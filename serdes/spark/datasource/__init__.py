"""The ``schemakit`` Spark data source: any ``streams.log`` (``sqlite://``, ``kafka://``) as a Spark source and
sink with the columns and options of Spark's Kafka source, on Spark 4's Python Data Source API.

``serdes.spark.register(spark)`` registers it on a session; ``source.py`` has the classes Spark calls. This is the
one part of serdes that imports ``streams.log`` (docs/architecture.md says why); nothing else of serdes imports it.
"""
