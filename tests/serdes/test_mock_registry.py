"""``RegistryClient("mock://")``: the registry in-process for unit tests, and the ``schema_registry`` fixture the
package's pytest plugin provides."""

from __future__ import annotations

import asyncio
import threading

import pytest

from serdes import AsyncRegistryClient, RegistryClient, RegistryError, Schema
from tests.serdes.round_trips import avro_round_trip, avro_round_trip_async

V1 = '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}'
V2_BAD = '{"type":"record","name":"R","fields":[{"name":"b","type":"string"}]}'


def registry_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mock-registry-")]


def test_fixture_is_a_real_registry(schema_registry: RegistryClient) -> None:
    schema_id = schema_registry.register("orders-value", Schema(V1))
    assert schema_registry.get_versions("orders-value") == [1]
    with pytest.raises(RegistryError) as err:
        schema_registry.register("orders-value", Schema(V2_BAD))
    assert (err.value.status, err.value.error_code) == (409, 409)
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in err.value.message
    with pytest.raises(RegistryError) as missing:
        schema_registry.get_schema(schema_id + 100)
    assert (missing.value.status, missing.value.error_code) == (404, 40403)
    assert avro_round_trip(schema_registry, schema_registry, V1, {"a": 5}, "orders") == {"a": 5}


def test_named_registries_are_shared_and_closed_with_the_last_client() -> None:
    before = len(registry_threads())
    with RegistryClient("mock://shared-a") as writer, RegistryClient("mock://shared-a") as reader:
        schema_id = writer.register("s", Schema(V1))
        assert reader.get_schema(schema_id).schema_str == V1
        with RegistryClient("mock://") as other, pytest.raises(RegistryError):  # anonymous: a registry of its own
            other.get_schema(schema_id)
    assert len(registry_threads()) == before
    with RegistryClient("mock://shared-a") as fresh:  # all closed: a new, empty registry
        assert fresh.get_subjects() == []


def test_async_client_on_mock() -> None:
    async def main() -> None:
        async with AsyncRegistryClient("mock://") as client:
            assert await avro_round_trip_async(client, client, V1, {"a": 1}, "t") == {"a": 1}
            assert await client.get_versions("t-value") == [1]

    before = len(registry_threads())
    asyncio.run(main())
    assert len(registry_threads()) == before


def test_mock_url_errors() -> None:
    with pytest.raises(ValueError, match="cannot be combined"):
        RegistryClient(["mock://", "http://localhost:1"])
    with pytest.raises(ValueError, match="must start with http:// or https://"):
        RegistryClient("ftp://x")


def test_mock_registry_writes_no_file_and_drops_its_log_on_close(tmp_path, monkeypatch) -> None:
    import tempfile

    from streams.log.sqlite import connection

    for d in ("tmp", "cwd"):
        (tmp_path / d).mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.chdir(tmp_path / "cwd")
    logs_before = connection.memory_dbs.names()
    with RegistryClient("mock://") as client:
        schema_id = client.register("orders-value", Schema(V1))
        assert avro_round_trip(client, client, V1, {"a": 7}, "orders") == {"a": 7}
        assert client.get_schema(schema_id).schema_str == V1
        [log_name] = connection.memory_dbs.names() - logs_before
        assert log_name.startswith("mock-registry-")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["cwd", "tmp"]  # nothing in the temp dir or cwd
    assert connection.memory_dbs.names() == logs_before
