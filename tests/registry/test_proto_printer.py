"""proto_printer: descriptor -> canonical .proto text -> descriptor is stable.

For every schema: compile the text with protoc, print the descriptor, compile the printed text again:
the two descriptors are equal and printing the second gives the same text (idempotent).
"""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2

from registry.schema_types import proto_printer
from registry.schema_types.protoc import MAIN_FILE, compile_files

COMMON = 'syntax = "proto3";\npackage acme.common;\nmessage Money { string currency = 1; int64 units = 2; }\n'

SCHEMAS: dict[str, tuple[str, dict[str, str]]] = {
    "scalars": (
        'syntax = "proto3";\nmessage S { double d = 1; float f = 2; int32 i32 = 3; int64 i64 = 4; '
        "uint32 u32 = 5; uint64 u64 = 6; sint32 s32 = 7; sint64 s64 = 8; fixed32 f32 = 9; fixed64 f64 = 10; "
        "sfixed32 sf32 = 11; sfixed64 sf64 = 12; bool b = 13; string s = 14; bytes by = 15; }",
        {},
    ),
    "nested": (
        'syntax = "proto3";\npackage a.b;\nmessage Outer { message Middle { message Inner { int32 x = 1; } '
        "Inner inner = 1; } Middle middle = 1; Middle.Inner direct = 2; }",
        {},
    ),
    "enums": (
        'syntax = "proto3";\nenum Top { TOP_UNKNOWN = 0; TOP_A = 1; }\nmessage M { enum Kind { K0 = 0; K1 = 1; '
        "K2 = 2 [deprecated = true]; } Kind kind = 1; Top top = 2; }",
        {},
    ),
    "enum-alias-reserved": (
        'syntax = "proto3";\nenum E { option allow_alias = true; E0 = 0; E1 = 1; ALSO_E1 = 1; '
        'reserved 5, 8 to 10, 100 to max; reserved "OLD"; }',
        {},
    ),
    "oneofs": (
        'syntax = "proto3";\nmessage M { string before = 1; '
        "oneof choice { int32 a = 2; string b = 3; M c = 4; } "
        "string after = 5; oneof second { bool x = 6; } }",
        {},
    ),
    "maps": (
        'syntax = "proto3";\nmessage M { map<string, int32> counts = 1; map<int64, M> children = 2; '
        "map<bool, E> flags = 3; enum E { E0 = 0; } }",
        {},
    ),
    "repeated-packed": (
        'syntax = "proto3";\nmessage M { repeated int32 a = 1; repeated int32 b = 2 [packed = false]; '
        "repeated string c = 3; repeated M d = 4; }",
        {},
    ),
    "proto3-optional": (
        'syntax = "proto3";\nmessage M { optional int32 a = 1; optional string b = 2; '
        "oneof real { int32 c = 3; } optional M d = 4; }",
        {},
    ),
    "reserved": (
        'syntax = "proto3";\nmessage M { reserved 2, 15, 9 to 11, 1000 to max; reserved "foo", "bar"; '
        "string name = 1; }",
        {},
    ),
    "options": (
        'syntax = "proto3";\npackage opts;\noption java_package = "com.acme.opts";\n'
        'option java_multiple_files = true;\noption optimize_for = SPEED;\noption go_package = "acme/opts";\n'
        "message M { option deprecated = true; string a = 1 [deprecated = true]; "
        'int64 b = 2 [jstype = JS_STRING]; string c = 3 [json_name = "customName"]; }',
        {},
    ),
    "well-known-imports": (
        'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n'
        'import "google/protobuf/any.proto";\nimport "google/protobuf/wrappers.proto";\n'
        "message M { google.protobuf.Timestamp ts = 1; google.protobuf.Any any = 2; "
        "google.protobuf.StringValue sv = 3; }",
        {},
    ),
    "user-import": (
        'syntax = "proto3";\npackage acme.orders;\nimport "acme/common.proto";\n'
        "message Order { acme.common.Money total = 1; repeated acme.common.Money lines = 2; }",
        {"acme/common.proto": COMMON},
    ),
    "public-import": (
        'syntax = "proto3";\nimport public "acme/common.proto";\nmessage M { acme.common.Money m = 1; }',
        {"acme/common.proto": COMMON},
    ),
    "proto2-labels-defaults": (
        'syntax = "proto2";\npackage p2;\nmessage M { required string id = 1; '
        "optional int32 n = 2 [default = -7]; "
        'optional string s = 3 [default = "a\\"b\\n\\u00e9"]; '
        "optional double d = 4 [default = inf]; optional E e = 5 [default = E_TWO]; "
        'optional bytes raw = 6 [default = "\\001\\377"]; '
        "optional bool flag = 7 [default = true]; "
        "optional float f = 8 [default = 1.5]; repeated int32 xs = 9 [packed = true]; "
        "enum E { E_ONE = 1; E_TWO = 2; } }",
        {},
    ),
    "proto2-extensions": (
        'syntax = "proto2";\npackage ext;\nmessage Base { optional int32 id = 1; '
        "extensions 100 to 199, 1000 to max; }\nextend Base { optional string note = 100; "
        "repeated int32 tags = 101; }\n"
        "message Holder { extend Base { optional Holder holder = 150; } }",
        {},
    ),
    "proto2-group": (
        'syntax = "proto2";\nmessage M { optional group Result = 1 { optional string url = 2; '
        "repeated string snippets = 3; } repeated group Item = 4 { required int32 n = 5; } }",
        {},
    ),
    "services": (
        'syntax = "proto3";\npackage svc;\nmessage Req { string q = 1; }\nmessage Resp { string r = 1; }\n'
        "service Search { rpc Find (Req) returns (Resp); rpc Stream (stream Req) returns (stream Resp); "
        "rpc Old (Req) returns (Resp) { option deprecated = true; } }",
        {},
    ),
    "no-package-nested-enum-ref": (
        'syntax = "proto3";\nmessage A { B.Kind kind = 1; }\nmessage B { enum Kind { KIND_UNSPECIFIED = 0; } }',
        {},
    ),
    "confluent-custom-options": (
        'syntax = "proto3";\npackage tagged;\nimport "confluent/meta.proto";\n'
        'option (confluent.file_meta) = { doc: "file" };\n'
        'message M { option (confluent.message_meta) = { tags: "A" tags: "B" };\n'
        'string ssn = 1 [(confluent.field_meta) = { tags: "PII" params { key: "k" '
        'value: "v" } }, deprecated = true];\n'
        'E e = 2; enum E { option (confluent.enum_meta) = { doc: "e" }; '
        'E0 = 0 [(confluent.enum_value_meta) = { doc: "zero" }]; } }',
        {},
    ),
    "own-custom-option": (
        'syntax = "proto2";\nimport "google/protobuf/descriptor.proto";\n'
        "extend google.protobuf.FieldOptions { optional int32 weight = 50000; "
        "repeated string labels = 50001; }\n"
        'message M { optional string a = 1 [(weight) = 3, (labels) = "x", (labels) = "y"]; }',
        {},
    ),
    "unicode-and-escapes": (
        'syntax = "proto3";\noption java_outer_classname = "Ünïcødé\\tX";\nmessage M { string s = 1; }',
        {},
    ),
}


def _compile_all(text: str, imports: dict[str, str]) -> list[descriptor_pb2.FileDescriptorProto]:
    """Every file of the descriptor set, the main file last."""
    fds = compile_files(text, tuple(sorted(imports.items())))
    return sorted(fds.file, key=lambda f: f.name == MAIN_FILE)


def _compile(text: str, imports: dict[str, str]) -> descriptor_pb2.FileDescriptorProto:
    return _compile_all(text, imports)[-1]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_round_trip_is_stable(name: str) -> None:
    text, imports = SCHEMAS[name]
    *deps, first = _compile_all(text, imports)
    printed = proto_printer.print_file(first, deps)
    *deps2, second = _compile_all(printed, imports)
    assert second == first, printed
    assert proto_printer.print_file(second, deps2) == printed


def test_custom_options_are_printed_in_aggregate_syntax() -> None:
    *deps, fd = _compile_all(*SCHEMAS["confluent-custom-options"])
    printed = proto_printer.print_file(fd, deps)
    assert 'option (confluent.file_meta) = { doc: "file" };\n' in printed
    assert '  option (confluent.message_meta) = { tags: "A" tags: "B" };\n' in printed
    assert (
        '  string ssn = 1 [deprecated = true, (confluent.field_meta) = { params { key: "k" value: "v" } '
        'tags: "PII" }];\n'
    ) in printed
    assert '    E0 = 0 [(confluent.enum_value_meta) = { doc: "zero" }];\n' in printed


OPTS = (
    'syntax = "proto2";\npackage opts;\nimport "google/protobuf/descriptor.proto";\n'
    "extend google.protobuf.FieldOptions { optional string owner = 51234; }\n"
)
USES_OPTS = 'syntax = "proto3";\nimport "opts.proto";\nmessage M { string a = 1 [(opts.owner) = "team-a"]; }\n'


def test_custom_options_from_an_imported_file_need_that_file() -> None:
    *deps, fd = _compile_all(USES_OPTS, {"opts.proto": OPTS})
    assert '  string a = 1 [(opts.owner) = "team-a"];\n' in proto_printer.print_file(fd, deps)
    # without the defining file the option cannot be named: it is left out of the text
    assert "  string a = 1;\n" in proto_printer.print_file(fd)


def test_schema_count() -> None:
    assert len(SCHEMAS) >= 15


def test_layout_of_a_typical_schema() -> None:
    text = (
        'syntax = "proto3";\npackage acme;\nimport "google/protobuf/timestamp.proto";\n'
        'option java_package = "com.acme";\n'
        "message Order {\n  reserved 9;\n  string id = 1;\n  map<string, int32> qty = 2;\n"
        "  oneof pay { string card = 3; string iban = 4; }\n  optional google.protobuf.Timestamp at = 5;\n"
        "  repeated Line lines = 6;\n  message Line { string sku = 1; }\n  enum State { NEW = 0; DONE = 1; }\n}\n"
    )
    assert proto_printer.print_file(_compile(text, {})) == (
        'syntax = "proto3";\n'
        "package acme;\n"
        "\n"
        'import "google/protobuf/timestamp.proto";\n'
        "\n"
        'option java_package = "com.acme";\n'
        "\n"
        "message Order {\n"
        "  reserved 9;\n"
        "\n"
        "  string id = 1;\n"
        "  map<string, int32> qty = 2;\n"
        "  oneof pay {\n"
        "    string card = 3;\n"
        "    string iban = 4;\n"
        "  }\n"
        "  optional .google.protobuf.Timestamp at = 5;\n"
        "  repeated .acme.Order.Line lines = 6;\n"
        "\n"
        "  message Line {\n"
        "    string sku = 1;\n"
        "  }\n"
        "  enum State {\n"
        "    NEW = 0;\n"
        "    DONE = 1;\n"
        "  }\n"
        "}\n"
    )


def test_json_name_printed_only_when_not_default() -> None:
    text = 'syntax = "proto3";\nmessage M { string user_id = 1; string other = 2 [json_name = "x_y"]; }'
    printed = proto_printer.print_file(_compile(text, {}))
    assert "  string user_id = 1;\n" in printed
    assert '  string other = 2 [json_name = "x_y"];\n' in printed


def test_default_json_name_matches_protoc() -> None:
    fd = _compile('syntax = "proto3";\nmessage M { string a_b_c = 1; string _x = 2; string y__z = 3; }', {})
    for field in fd.message_type[0].field:
        assert proto_printer.default_json_name(field.name) == field.json_name
