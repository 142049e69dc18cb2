"""The _schemas record format byte for byte, and the state machine replaying Confluent-written logs."""

from __future__ import annotations

from typing import Any

import pytest

from registry import schemas_topic
from registry.schemas_topic import Key, RecordFormatError, decode_key
from registry.state import State


def test_keys_are_confluent_bytes() -> None:
    assert Key("SCHEMA", "orders-value", 1).encode() == (
        b'{"keytype":"SCHEMA","subject":"orders-value","version":1,"magic":1}'
    )
    assert Key("CONFIG", "orders-value").encode() == b'{"keytype":"CONFIG","subject":"orders-value","magic":0}'
    assert Key("CONFIG", None).encode() == b'{"keytype":"CONFIG","subject":null,"magic":0}'
    assert Key("MODE", None).encode() == b'{"keytype":"MODE","subject":null,"magic":0}'
    assert Key("NOOP").encode() == b'{"keytype":"NOOP","magic":0}'
    assert Key("DELETE_SUBJECT", "s").encode() == b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}'
    assert Key("CLEAR_SUBJECT", "s").encode() == b'{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}'
    # non-ASCII stays as UTF-8, like Jackson
    expected = '{"keytype":"SCHEMA","subject":"zürich","version":2,"magic":1}'
    assert Key("SCHEMA", "zürich", 2).encode() == expected.encode()


def schema_rec(
    subject: str,
    version: int,
    sid: int,
    schema: str,
    deleted: bool = False,
    schema_type: str = "AVRO",
    references: list[dict[str, Any]] | None = None,
) -> bytes:
    """A SCHEMA record's value (without metadata or rules)."""
    return schemas_topic.schema_value(
        subject=subject,
        version=version,
        schema_id=sid,
        schema_type=schema_type,
        schema=schema,
        references=references or [],
        metadata=None,
        rule_set=None,
        deleted=deleted,
    )


def test_values_are_confluent_json() -> None:
    assert (
        schema_rec("s", 1, 7, '"string"')
        == b'{"subject":"s","version":1,"id":7,"schema":"\\"string\\"","deleted":false}'
    )
    references = [{"name": "a.proto", "subject": "a", "version": 1}]
    assert schema_rec("s", 2, 8, "syntax", deleted=True, schema_type="PROTOBUF", references=references) == (
        b'{"subject":"s","version":2,"id":8,"schemaType":"PROTOBUF","references":[{"name":"a.proto",'
        b'"subject":"a","version":1}],"schema":"syntax","deleted":true}'
    )
    assert schemas_topic.config_value(None, {"compatibilityLevel": "FULL"}) == b'{"compatibilityLevel":"FULL"}'
    assert schemas_topic.config_value("s", {"compatibilityLevel": "NONE", "normalize": True}) == (
        b'{"subject":"s","compatibilityLevel":"NONE","normalize":true}'
    )
    assert schemas_topic.mode_value("s", "IMPORT") == b'{"subject":"s","mode":"IMPORT"}'
    assert schemas_topic.delete_subject_value("s", 3) == b'{"subject":"s","version":3}'


def test_legacy_keys_decode_and_keep_raw_bytes() -> None:
    legacy = b'{"subject":"s","version":1,"magic":0,"keytype":"SCHEMA"}'
    k = decode_key(legacy)
    assert (k.keytype, k.subject, k.version, k.raw) == ("SCHEMA", "s", 1, legacy)
    assert k == Key("SCHEMA", "s", 1)  # raw bytes do not take part in equality
    with pytest.raises(RecordFormatError):
        decode_key(b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":7}')
    with pytest.raises(RecordFormatError):
        decode_key(b'{"keytype":"WHATEVER","magic":0}')
    with pytest.raises(RecordFormatError):
        decode_key(b"not json")


def replay(log: list[tuple[bytes, bytes | None]]) -> State:
    st = State()
    for offset, (k, v) in enumerate(log):
        st.apply(offset, k, v, 1000 + offset)
    return st


def test_replay_confluent_log() -> None:
    legacy_key = b'{"subject":"a","version":2,"magic":0,"keytype":"SCHEMA"}'
    st = replay(
        [
            (Key("SCHEMA", "a", 1).encode(), schema_rec("a", 1, 1, '"string"')),
            (legacy_key, b'{"subject":"a","version":2,"id":2,"schema":"\\"int\\"","deleted":false}'),
            (Key("SCHEMA", "b", 1).encode(), schema_rec("b", 1, 1, '"string"')),
            (Key("CONFIG", None).encode(), b'{"compatibilityLevel":"FULL"}'),
            (Key("CONFIG", "a").encode(), b'{"compatibilityLevel":"NONE"}'),  # legacy value without subject
            (Key("MODE", "b").encode(), b'{"subject":"b","mode":"READONLY"}'),
            (Key("NOOP").encode(), None),
            (Key("DELETE_SUBJECT", "b").encode(), schemas_topic.delete_subject_value("b", 1)),
            (b"garbage", b"garbage"),  # skipped, not fatal
            (Key("SCHEMA", "c", 1).encode(), schema_rec("c", 1, 2, '"long"')),  # id 2 already names "int": ignored
            (Key("SCHEMA", "a", 1).encode(), schema_rec("a", 1, 1, '"string"', deleted=True)),
            (legacy_key, None),  # hard delete of a/2 written with the legacy key bytes
        ]
    )
    assert st.offset == 11
    assert [v.version for v in st.versions("a", deleted=True)] == [1]
    assert st.versions("a") == []
    assert st.versions("b") == [] and [v.version for v in st.versions("b", deleted=True)] == [1]
    assert "c" not in st.subjects
    assert st.configs == {None: {"compatibilityLevel": "FULL"}, "a": {"compatibilityLevel": "NONE"}}
    assert st.modes == {"b": "READONLY"}
    assert st.max_id == 2
    assert {i: set(pairs) for i, pairs in st.id_versions.items()} == {1: {("a", 1), ("b", 1)}}
    # a hard delete tombstones every byte form the version was written with
    st2 = replay(
        [
            (legacy_key, b'{"subject":"a","version":2,"id":2,"schema":"\\"int\\"","deleted":true}'),
            (Key("SCHEMA", "a", 2).encode(), b'{"subject":"a","version":2,"id":2,"schema":"\\"int\\"","deleted":true}'),
        ]
    )
    assert st2.raw_keys(Key("SCHEMA", "a", 2)) == {legacy_key, Key("SCHEMA", "a", 2).encode()}


def test_clear_subject_drops_soft_deleted() -> None:
    st = replay(
        [
            (Key("SCHEMA", "a", 1).encode(), schema_rec("a", 1, 1, '"string"', deleted=True)),
            (Key("SCHEMA", "a", 2).encode(), schema_rec("a", 2, 2, '"int"')),
            (Key("CLEAR_SUBJECT", "a").encode(), schemas_topic.clear_subject_value("a")),
        ]
    )
    assert [v.version for v in st.versions("a", deleted=True)] == [2]
