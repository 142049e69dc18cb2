"""Helpers of the test suite: what the tests start, wait on and read, kept out of the conftest files.

The conftest files hold only fixtures, each a thin call into these modules; test modules import helpers
from here (never from a conftest). Helpers that serve one directory's tests only stay beside them
(``tests/streams/topologies.py``, ``tests/ha/load.py``, ``tests/registry/hostile.py``, ...).

- ``waiting``: the one deadline loop (``wait_for``, ``poll_until``, ``wait_for_async``).
- ``ports``: free TCP ports for the servers the tests start.
- ``broker``: the Kafka-protocol test broker (tansu, or an external Kafka) and what it lacks.
- ``registry_process``: a ``schemakit serve`` child process; ``registry_cluster``: several on one Kafka log.
- ``credentials``: certificates, a token issuer and users files for the secured registry.
- ``http_stub``: a stand-in HTTP server in the test process that answers GETs and records their headers.
- ``topics``: creating topics, producing items to a topic and reading a whole topic back, through a ``Log``
  (``read_to_end`` stops at the end offsets where they are exact, SQLite, instead of waiting for quiet).
- ``cli``: the ``schemakit`` command line, as a child process or in this one.
- ``protos``: compiling test ``.proto`` texts with protoc.
- ``schemas``: the records the serdes tests and benchmarks write: the order (Avro, JSON Schema, dataclasses, and
  ``order_variant`` for other versions of it), the payment the encryption tests encrypt, the Avro primitive fields.
- ``kms``: field-level encryption: the one ``local-kms`` secret, confluent-kafka's executors, the ENCRYPT rule and
  registering a subject under it.
- ``spark``: whether Spark can run here, and the session the Spark tests share.
- ``browser``: headless Chromium for the schema browser's tests.
- ``faults``: network faults per process (namespaces, iptables, a TCP proxy) and the fault tests' broker.
- ``net_cluster``: a registry cluster with each instance in a network namespace of its own.
- ``invariants``: the registry's invariants after a fault, checked over every instance.
- ``scheduling``: the order in which ``--dist loadfile`` hands files to the xdist workers.
"""

from pathlib import Path

#: the checkout's root: where ``python -m ...`` child processes run, and what ``PYTHONPATH`` names for them
REPO_ROOT = Path(__file__).resolve().parents[2]
