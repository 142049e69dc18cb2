"""ProtobufType: .proto text and base64 descriptors in, canonical text and serialized descriptors out."""

from __future__ import annotations

import base64

import pytest
from confluent_kafka.schema_registry.common.protobuf import _init_pool, _schema_to_str, _str_to_proto
from google.protobuf import descriptor_pb2, descriptor_pool

from compat.levels import CompatibilityLevel, check_levels
from registry.schema_types.base import InvalidSchemaError, ResolvedReference
from registry.schema_types.protobuf import DEFAULT_FILE_NAME, ProtobufType, decode_descriptor

ORDER = """
syntax = "proto3";
package acme.orders;

import "google/protobuf/timestamp.proto";

message Order {
    string id = 1;
    google.protobuf.Timestamp created = 2;
    repeated Line lines = 3;
    message Line { string sku = 1; int32 qty = 2; }
}
message Refund { string order_id = 1; }
"""

COMMON = 'syntax = "proto3";\npackage acme.common;\nmessage Money { string currency = 1; int64 units = 2; }\n'
USES_COMMON = (
    'syntax = "proto3";\npackage acme.billing;\nimport "acme/common.proto";\n'
    "message Invoice { acme.common.Money total = 1; }\n"
)

schema_type = ProtobufType()


def _ref(name: str, schema: str, *refs: ResolvedReference) -> ResolvedReference:
    return ResolvedReference(name, name, 1, schema, "PROTOBUF", refs)


def _as_base64(text: str, refs: tuple[ResolvedReference, ...] = ()) -> str:
    """What confluent-kafka's ProtobufSerializer registers: base64 of the file's FileDescriptorProto."""
    parsed = schema_type.parse(text, refs)
    pool = descriptor_pool.DescriptorPool()
    _init_pool(pool)
    for name, dep in parsed.parsed.dependencies.items():
        if not name.startswith("google/"):
            pool.Add(dep)
    fd = descriptor_pb2.FileDescriptorProto()
    fd.CopyFrom(parsed.parsed.descriptor)
    fd.name = "orders.proto"
    pool.Add(fd)
    return _schema_to_str(pool.FindFileByName("orders.proto"))


def test_text_parses_to_canonical_text_and_names() -> None:
    parsed = schema_type.parse(ORDER)
    assert parsed.schema_type == "PROTOBUF"
    assert parsed.names == ("acme.orders.Order", "acme.orders.Order.Line", "acme.orders.Refund")
    assert parsed.canonical.startswith(
        'syntax = "proto3";\npackage acme.orders;\n\nimport "google/protobuf/timestamp.proto";\n'
    )
    assert "  .google.protobuf.Timestamp created = 2;\n" in parsed.canonical
    assert parsed.parsed.descriptor.name == DEFAULT_FILE_NAME
    assert "google/protobuf/timestamp.proto" in parsed.parsed.dependencies


def test_canonical_text_is_a_fixed_point() -> None:
    first = schema_type.parse(ORDER)
    again = schema_type.parse(first.canonical)
    assert again.canonical == first.canonical
    assert again.parsed.descriptor == first.parsed.descriptor


def test_whitespace_and_comment_differences_share_one_canonical_form() -> None:
    noisy = ORDER.replace("    ", "\t").replace("message Refund", "// refunds\nmessage   Refund")
    assert schema_type.parse(noisy).canonical == schema_type.parse(ORDER).canonical


def test_base64_descriptor_from_confluent_kafka_gives_same_canonical_as_text() -> None:
    encoded = _as_base64(ORDER)
    assert decode_descriptor(encoded) is not None
    parsed = schema_type.parse(encoded)
    assert parsed.canonical == schema_type.parse(ORDER).canonical
    assert parsed.names[0] == "acme.orders.Order"


def test_text_is_not_mistaken_for_base64() -> None:
    assert decode_descriptor(ORDER) is None
    assert decode_descriptor("syntax") is None


def test_serialized_format_is_a_descriptor_confluent_kafka_can_load() -> None:
    for source in (ORDER, _as_base64(ORDER)):
        parsed = schema_type.parse(source)
        serialized = schema_type.format(parsed, "serialized")
        assert serialized is not None
        fd = _str_to_proto("default", serialized)
        assert fd == parsed.parsed.descriptor
        pool = descriptor_pool.DescriptorPool()
        _init_pool(pool)
        pool.Add(fd)
        message = pool.FindMessageTypeByName("acme.orders.Order")
        assert [f.name for f in message.fields] == ["id", "created", "lines"]


def test_reference_given_as_text() -> None:
    parsed = schema_type.parse(USES_COMMON, (_ref("acme/common.proto", COMMON),))
    assert list(parsed.parsed.descriptor.dependency) == ["acme/common.proto"]
    assert "acme/common.proto" in parsed.parsed.dependencies
    assert "  .acme.common.Money total = 1;\n" in parsed.canonical


def test_reference_given_as_base64_descriptor() -> None:
    common_b64 = base64.b64encode(schema_type.parse(COMMON).parsed.descriptor.SerializeToString()).decode()
    parsed = schema_type.parse(USES_COMMON, (_ref("acme/common.proto", common_b64),))
    assert parsed.parsed.dependencies["acme/common.proto"].message_type[0].name == "Money"


def test_transitive_references() -> None:
    middle = (
        'syntax = "proto3";\npackage acme.mid;\nimport "acme/common.proto";\n'
        "message Wrap { acme.common.Money m = 1; }\n"
    )
    top = 'syntax = "proto3";\nimport "acme/mid.proto";\nmessage Top { acme.mid.Wrap w = 1; }\n'
    refs = (_ref("acme/mid.proto", middle, _ref("acme/common.proto", COMMON)),)
    parsed = schema_type.parse(top, refs)
    assert set(parsed.parsed.dependencies) == {"acme/mid.proto", "acme/common.proto"}


def test_google_type_imports_resolve_without_references() -> None:
    text = 'syntax = "proto3";\nimport "google/type/money.proto";\nmessage Price { google.type.Money amount = 1; }\n'
    assert "google/type/money.proto" in schema_type.parse(text).parsed.dependencies


def test_missing_import_is_invalid_with_protocs_message() -> None:
    with pytest.raises(InvalidSchemaError, match=r"acme/common\.proto"):
        schema_type.parse(USES_COMMON)


def test_syntax_error_is_invalid_with_line_and_column() -> None:
    with pytest.raises(InvalidSchemaError, match=r'^schema:2:\d+: "strng" is not defined\.'):
        schema_type.parse('syntax = "proto3";\nmessage M { strng a = 1; }\n')


def test_duplicate_field_number_is_invalid() -> None:
    with pytest.raises(InvalidSchemaError, match=r"Field number 1 has already been used in \"M\" by field \"a\""):
        schema_type.parse('syntax = "proto3";\nmessage M { string a = 1; string b = 1; }\n')


def test_empty_schema_is_invalid() -> None:
    with pytest.raises(InvalidSchemaError, match="empty"):
        schema_type.parse("   ")


def test_reference_name_escaping_the_temp_dir_is_invalid() -> None:
    with pytest.raises(InvalidSchemaError, match="Invalid import path"):
        schema_type.parse('syntax = "proto3";\nimport "../x.proto";\n', (_ref("../x.proto", COMMON),))


def test_ignore_extensions_format_drops_extensions() -> None:
    text = (
        'syntax = "proto2";\nmessage B { optional int32 a = 1; extensions 10 to 20; }\n'
        "extend B { optional int32 x = 10; }\n"
    )
    parsed = schema_type.parse(text)
    stripped = schema_type.format(parsed, "ignore_extensions")
    assert stripped is not None and "extend" not in stripped and "extensions" not in stripped
    assert "extend .B {" in parsed.canonical
    assert schema_type.format(parsed, "resolved") is None


def test_normalize_sorts_imports() -> None:
    text = (
        'syntax = "proto3";\nimport "google/protobuf/wrappers.proto";\nimport "google/protobuf/any.proto";\n'
        "message M { google.protobuf.Any a = 1; google.protobuf.Int32Value v = 2; }\n"
    )
    normalized = schema_type.normalize(schema_type.parse(text))
    assert normalized.canonical.index("any.proto") < normalized.canonical.index("wrappers.proto")


def test_check_plugs_into_levels_in_reader_writer_direction() -> None:
    v1 = schema_type.parse('syntax = "proto2";\nmessage M { optional string a = 1; }\n')
    v2 = schema_type.parse('syntax = "proto2";\nmessage M { optional string a = 1; required int32 b = 2; }\n')
    backward = check_levels(CompatibilityLevel.BACKWARD, v2, [v1], schema_type.check)
    assert [i.kind for i in backward.incompatibilities] == ["REQUIRED_FIELD_ADDED"]
    forward = check_levels(CompatibilityLevel.FORWARD, v2, [v1], schema_type.check)
    assert [i.kind for i in forward.incompatibilities] == ["REQUIRED_FIELD_REMOVED"]


TAGGED = (
    'syntax = "proto3";\npackage acme.pii;\nimport "confluent/meta.proto";\n'
    'message Person { string ssn = 1 [(confluent.field_meta) = { tags: "PII" }]; string name = 2; }\n'
)


def test_confluent_meta_import_resolves_without_references() -> None:
    parsed = schema_type.parse(TAGGED)
    assert "confluent/meta.proto" in parsed.parsed.dependencies
    assert '  string ssn = 1 [(confluent.field_meta) = { tags: "PII" }];\n' in parsed.canonical


def test_custom_options_survive_the_base64_path() -> None:
    text_form = schema_type.parse(TAGGED)
    encoded = base64.b64encode(text_form.parsed.descriptor.SerializeToString()).decode()
    assert schema_type.parse(encoded).canonical == text_form.canonical
