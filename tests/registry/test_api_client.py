"""The registry driven by confluent-kafka's own SchemaRegistryClient, as a Confluent user would."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from tests.registry.schemas import V1, V2, V3_BAD, record


def test_register_lookup_fetch(sr: SchemaRegistryClient, subject: str) -> None:
    sid = sr.register_schema(subject, Schema(V1, "AVRO"))
    assert sid >= 1
    # the same schema again, even with other whitespace, answers the same id
    assert sr.register_schema(subject, Schema(json.dumps(json.loads(V1), indent=2), "AVRO")) == sid
    fetched = sr.get_schema(sid)
    assert json.loads(fetched.schema_str) == json.loads(V1)
    assert fetched.schema_type == "AVRO"
    looked = sr.lookup_schema(subject, Schema(V1, "AVRO"))
    assert (looked.schema_id, looked.subject, looked.version) == (sid, subject, 1)
    latest = sr.get_latest_version(subject)
    assert (latest.schema_id, latest.version) == (sid, 1)
    assert sr.get_versions(subject) == [1]
    assert subject in sr.get_subjects()


def test_same_schema_other_subject_reuses_id(sr: SchemaRegistryClient, subject: str) -> None:
    sid = sr.register_schema(subject, Schema(V1, "AVRO"))
    other = subject + "-other"
    assert sr.register_schema(other, Schema(V1, "AVRO")) == sid
    # (other tests on the shared server may use the same schema: only ours are asserted)
    assert {subject, other} <= set(sr.get_subjects_by_schema_id(sid))
    versions = sr.get_schema_versions(sid)
    assert {(subject, 1), (other, 1)} <= {(v.subject, v.version) for v in versions}


def test_evolution_and_incompatible(sr: SchemaRegistryClient, subject: str) -> None:
    id1 = sr.register_schema(subject, Schema(V1, "AVRO"))
    id2 = sr.register_schema(subject, Schema(V2, "AVRO"))
    assert id2 == id1 + 1 or id2 > id1
    assert sr.get_versions(subject) == [1, 2]
    assert sr.test_compatibility(subject, Schema(V3_BAD, "AVRO")) is False
    with pytest.raises(SchemaRegistryError) as e:
        sr.register_schema(subject, Schema(V3_BAD, "AVRO"))
    assert e.value.http_status_code == 409
    assert e.value.error_code == 409
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in e.value.error_message
    assert f'earlier schema for subject "{subject}"' in e.value.error_message


def test_soft_and_hard_delete(sr: SchemaRegistryClient, subject: str) -> None:
    sid = sr.register_schema(subject, Schema(V1, "AVRO"))
    sr.register_schema(subject, Schema(V2, "AVRO"))
    assert sr.delete_version(subject, 2) == 2
    assert sr.get_versions(subject) == [1]
    # versions are never reused after a soft delete
    sr.set_compatibility(subject, "NONE")
    sr.register_schema(subject, Schema(V3_BAD, "AVRO"))
    assert sr.get_versions(subject) == [1, 3]
    assert sorted(sr.delete_subject(subject)) == [1, 3]
    assert subject not in sr.get_subjects()
    # soft-deleted schemas stay readable by id
    assert json.loads(sr.get_schema(sid).schema_str) == json.loads(V1)
    assert sorted(sr.delete_subject(subject, permanent=True)) == [1, 2, 3]
    with pytest.raises(SchemaRegistryError) as e:
        sr.get_versions(subject)
    assert e.value.error_code == 40401


def test_references(sr: SchemaRegistryClient, subject: str) -> None:
    ns = "com.acme" + uuid.uuid4().hex[:6]
    common = json.dumps(
        {"type": "record", "name": "Address", "namespace": ns, "fields": [{"name": "city", "type": "string"}]}
    )
    common_subject = subject + "-address"
    sr.register_schema(common_subject, Schema(common, "AVRO"))
    main = json.dumps(
        {
            "type": "record",
            "name": "Customer",
            "namespace": ns,
            "fields": [{"name": "name", "type": "string"}, {"name": "address", "type": f"{ns}.Address"}],
        }
    )
    refs = [SchemaReference(f"{ns}.Address", common_subject, 1)]
    sid = sr.register_schema(subject, Schema(main, "AVRO", refs))
    got = sr.get_schema(sid)
    assert [(r.name, r.subject, r.version) for r in got.references] == [(f"{ns}.Address", common_subject, 1)]
    # the stored schema names the referenced type only by name (same namespace: the short name, as Java prints)
    assert '"type":"Address"' in got.schema_str and "city" not in got.schema_str
    assert sr.get_referenced_by(common_subject, 1) == [sid]
    # a referenced version cannot be deleted
    with pytest.raises(SchemaRegistryError) as e:
        sr.delete_version(common_subject, 1)
    assert e.value.error_code == 42206


def test_config_resolution(sr: SchemaRegistryClient, subject: str) -> None:
    assert sr.get_compatibility() == "BACKWARD"  # the shared server's global level is never changed
    sr.register_schema(subject, Schema(V1, "AVRO"))
    with pytest.raises(SchemaRegistryError) as e:
        sr.get_compatibility(subject)
    assert e.value.error_code == 40408
    assert sr.set_compatibility(subject, "full")["compatibility"] == "FULL"
    assert sr.get_compatibility(subject) == "FULL"
    with pytest.raises(SchemaRegistryError) as e:
        sr.set_compatibility(subject, "SIDEWAYS")
    assert e.value.error_code == 42203


def test_errors_carry_confluent_codes(sr: SchemaRegistryClient, subject: str) -> None:
    with pytest.raises(SchemaRegistryError) as e:
        sr.get_schema(987654321)
    assert (e.value.http_status_code, e.value.error_code) == (404, 40403)
    with pytest.raises(SchemaRegistryError) as e:
        sr.get_latest_version(subject)
    assert e.value.error_code == 40401
    sr.register_schema(subject, Schema(V1, "AVRO"))
    with pytest.raises(SchemaRegistryError) as e:
        sr.get_version(subject, 7)
    assert e.value.error_code == 40402
    with pytest.raises(SchemaRegistryError) as e:
        sr.register_schema(subject, Schema('{"type":"record","name":"X","fields":[{"name":"a"}]}', "AVRO"))
    assert (e.value.http_status_code, e.value.error_code) == (422, 42201)
    with pytest.raises(SchemaRegistryError) as e:
        sr.lookup_schema(subject, Schema(record("Other", ("x", "int")), "AVRO"))
    assert e.value.error_code == 40403
