"""Schema exporters (Confluent's schema linking): exporters defined through ``/exporters`` follow ``_schemas``
on the leader and repeat its changes at another registry, ids and versions kept.

- ``definition.py``: an exporter's fields and what they mean (which subjects, under which names);
- ``destination.py``: the destination registry over HTTP, every write idempotent;
- ``runner.py``: one exporter following the log;
- ``manager.py``: the ``/exporters`` operations, where exporters are stored, and which ones run.
"""

from registry.exporters.definition import ExporterDefinition
from registry.exporters.manager import ExporterManager
from registry.exporters.runner import ExporterState

__all__ = ["ExporterDefinition", "ExporterManager", "ExporterState"]
