"""Helpers of the test suite: what the tests start and wait on, kept out of the conftest files.

The conftest files hold only fixtures, each a thin call into these modules; test modules import helpers
from here (never from a conftest). ``waiting`` is the one deadline loop; ``broker`` the Kafka-protocol
test broker; ``registry_process`` a ``schemakit serve`` child process; ``credentials`` certificates, token
issuers and users files; ``cli`` the ``schemakit`` command line run as a process or in this one.
"""

from pathlib import Path

#: the checkout's root: where ``python -m ...`` child processes run, and what ``PYTHONPATH`` names for them
REPO_ROOT = Path(__file__).resolve().parents[2]
