"""``mock://`` is the real registry in-process: the HTTP API tests for register, lookup, versions and compatibility
run here unchanged against it (through the transport ``RegistryClient("mock://")`` uses), with the same answers
and error codes they expect from the server."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest

from registry.embedded import transport
from tests.registry.test_api_http import (  # noqa: F401  (collected here, run against mock://)
    test_compatibility_endpoint,
    test_invalid_schema_and_subject,
    test_lookup,
    test_metadata_and_ruleset_stored,
    test_normalize,
    test_references_resolved_format_and_referencedby,
    test_register_answers_id_version_and_guid,
    test_reregister_after_soft_delete_gets_new_version_same_id,
    test_version_errors,
    test_version_shape_and_raw_schema,
)
from tests.registry.test_contracts import (  # noqa: F401
    test_compatibility_group_checks_only_the_same_major_version,
    test_default_and_override_metadata_and_rule_sets_are_applied_at_registration,
)


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    """An httpx client on one in-process registry for this module (what ``RegistryClient("mock://")`` uses)."""
    before = set(threading.enumerate())
    with httpx.Client(base_url="http://mock", transport=transport("mock://parity", False)) as client:
        yield client
    assert set(threading.enumerate()) <= before  # closing the last client stopped the registry's thread
