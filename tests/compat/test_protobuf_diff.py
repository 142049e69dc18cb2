"""Protobuf compatibility: Confluent's change kinds, paths and verdicts.

Each case is (original, update, changes, compatible), with schemas compiled by the real protoc
through ``ProtobufType``: ``changes`` is the exact multiset of ``"<KIND> <path>"`` that
``diff(original, update)`` reports; ``compatible`` whether ``update`` as reader can read data written
with ``original`` (Confluent's BACKWARD). Several cases are taken as data from Confluent's
``protobuf-provider`` diff corpus.
"""

from __future__ import annotations

import pytest

from compat import protobuf as proto_compat
from registry.schema_types.base import ResolvedReference
from registry.schema_types.protobuf import ProtobufType
from tests.compat.helpers import assert_diff_case, assert_reported_as

P3 = 'syntax = "proto3";\n'
P2 = 'syntax = "proto2";\n'


def m3(body: str, extra: str = "", package: str = "") -> str:
    """A proto3 file with ``message TestMessage { body }`` and extra top-level declarations."""
    pkg = f"package {package};\n" if package else ""
    return f"{P3}{pkg}message TestMessage {{\n{body}\n}}\n{extra}"


def m2(body: str, extra: str = "") -> str:
    return f"{P2}message TestMessage {{\n{body}\n}}\n{extra}"


STATUS_ENUM = "enum Status { ACTIVE = 0; INACTIVE = 1; }"
NESTED = "message Status { string test_string = 1; }"

CASES: list[tuple[str, str, str, list[str], bool]] = [
    # -- fields
    ("field-added", m3("string a = 1;"), m3("string a = 1; string b = 2;"), ["FIELD_ADDED #/TestMessage/2"], True),
    ("field-removed", m3("string a = 1; string b = 2;"), m3("string a = 1;"), ["FIELD_REMOVED #/TestMessage/2"], True),
    (
        "field-renumbered",
        m3("string a = 1;"),
        m3("string a = 2;"),
        ["FIELD_REMOVED #/TestMessage/1", "FIELD_ADDED #/TestMessage/2"],
        True,
    ),
    ("field-renamed", m3("string a = 1;"), m3("string b = 1;"), ["FIELD_NAME_CHANGED #/TestMessage/1"], True),
    (
        "required-field-added",
        m2("optional string a = 1;"),
        m2("optional string a = 1; required string b = 2;"),
        ["REQUIRED_FIELD_ADDED #/TestMessage/2"],
        False,
    ),
    (
        "required-field-removed",
        m2("optional string a = 1; required string b = 2;"),
        m2("optional string a = 1;"),
        ["REQUIRED_FIELD_REMOVED #/TestMessage/2"],
        False,
    ),
    (
        "nested-field-added",
        f"{P3}message Wrapper {{ int32 w = 1; message TestMessage {{ string a = 1; }} }}",
        f"{P3}message Wrapper {{ int32 w = 1; message TestMessage {{ string a = 1; string b = 2; }} }}",
        ["FIELD_ADDED #/Wrapper/TestMessage/2"],
        True,
    ),
    # -- scalar groups
    ("int32-to-int64", m3("int32 x = 1;"), m3("int64 x = 1;"), [], True),
    ("int32-to-uint32", m3("int32 x = 1;"), m3("uint32 x = 1;"), [], True),
    ("uint64-to-bool", m3("uint64 x = 1;"), m3("bool x = 1;"), [], True),
    ("sint32-to-sint64", m3("sint32 x = 1;"), m3("sint64 x = 1;"), [], True),
    ("fixed32-to-sfixed32", m3("fixed32 x = 1;"), m3("sfixed32 x = 1;"), [], True),
    ("fixed64-to-sfixed64", m3("fixed64 x = 1;"), m3("sfixed64 x = 1;"), [], True),
    ("string-to-bytes", m3("string x = 1;"), m3("bytes x = 1;"), [], True),
    ("int32-to-sint32", m3("int32 x = 1;"), m3("sint32 x = 1;"), ["FIELD_SCALAR_KIND_CHANGED #/TestMessage/1"], False),
    (
        "int32-to-fixed32",
        m3("int32 x = 1;"),
        m3("fixed32 x = 1;"),
        ["FIELD_SCALAR_KIND_CHANGED #/TestMessage/1"],
        False,
    ),
    (
        "fixed32-to-fixed64",
        m3("fixed32 x = 1;"),
        m3("fixed64 x = 1;"),
        ["FIELD_SCALAR_KIND_CHANGED #/TestMessage/1"],
        False,
    ),
    ("float-to-double", m3("float x = 1;"), m3("double x = 1;"), ["FIELD_SCALAR_KIND_CHANGED #/TestMessage/1"], False),
    (
        "int32-to-string-renamed",
        m3("string a = 1; int32 test_int = 2;"),
        m3("string a = 1; string s2 = 2;"),
        ["FIELD_NAME_CHANGED #/TestMessage/2", "FIELD_SCALAR_KIND_CHANGED #/TestMessage/2"],
        False,
    ),
    ("int32-to-enum", m3("int32 x = 1;"), m3("Status x = 1;", STATUS_ENUM), ["ENUM_ADDED #/Status"], True),
    ("enum-to-int32", m3("Status x = 1;", STATUS_ENUM), m3("int32 x = 1;"), ["ENUM_REMOVED #/Status"], True),
    (
        "enum-to-string",
        m3("Status x = 1;", STATUS_ENUM),
        m3("string x = 1;", STATUS_ENUM),
        ["FIELD_SCALAR_KIND_CHANGED #/TestMessage/1"],
        False,
    ),
    # -- kinds
    (
        "scalar-to-message",
        m3("string a = 1; int32 x = 2;"),
        m3("string a = 1; TestMessage2 x = 2;", "message TestMessage2 { string s1 = 1; }"),
        ["MESSAGE_ADDED #/TestMessage2", "FIELD_KIND_CHANGED #/TestMessage/2"],
        False,
    ),
    (
        "scalar-to-nested-message-named-like-enum",
        m3("int32 x = 2;"),
        m3(f"TestMessage.Status x = 2; {NESTED}", STATUS_ENUM),
        ["FIELD_KIND_CHANGED #/TestMessage/2", "MESSAGE_ADDED #/TestMessage/Status", "ENUM_ADDED #/Status"],
        False,
    ),
    (
        "message-to-scalar",
        m3(f"TestMessage.Status x = 2; {NESTED}", STATUS_ENUM),
        m3("int32 x = 2;"),
        ["FIELD_KIND_CHANGED #/TestMessage/2", "MESSAGE_REMOVED #/TestMessage/Status", "ENUM_REMOVED #/Status"],
        False,
    ),
    (
        "scalar-to-map",
        m3("string x = 1;"),
        m3("map<string, string> x = 1;"),
        ["FIELD_KIND_CHANGED #/TestMessage/1"],
        False,
    ),
    (
        "map-value-changed",
        m3("map<string, int32> test_map_int = 2;"),
        m3("map<string, string> test_map_string = 2;"),
        ["FIELD_NAME_CHANGED #/TestMessage/2", "FIELD_SCALAR_KIND_CHANGED #/TestMessage/2"],
        False,
    ),
    ("map-value-widened", m3("map<string, int32> m = 1;"), m3("map<string, int64> m = 1;"), [], True),
    (
        "map-key-changed",
        m3("map<string, int32> m = 1;"),
        m3("map<int64, int32> m = 1;"),
        ["FIELD_SCALAR_KIND_CHANGED #/TestMessage/1"],
        False,
    ),
    (
        "map-name-qualification",
        m3(f"map<string, Status> m = 2; {NESTED}"),
        m3(f"map<string, TestMessage.Status> m = 2; {NESTED}"),
        [],
        True,
    ),
    (
        "named-type-changed",
        m3("TestMessage2 x = 2;", "message TestMessage2 { string s1 = 1; }"),
        m3("TestMessage3 x = 2;", "message TestMessage3 { string s1 = 1; }"),
        ["MESSAGE_REMOVED #/TestMessage2", "MESSAGE_ADDED #/TestMessage3", "FIELD_NAMED_TYPE_CHANGED #/TestMessage/2"],
        False,
    ),
    (
        "named-type-changed-incompatibly",
        m3("Inner x = 1;", "message Inner { int32 v = 1; }"),
        m3("Inner x = 1;", "message Inner { string v = 1; }"),
        ["FIELD_SCALAR_KIND_CHANGED #/Inner/1", "FIELD_NAMED_TYPE_CHANGED #/TestMessage/1"],
        False,
    ),
    (
        "named-type-changed-compatibly",
        m3("Inner x = 1;", "message Inner { int32 v = 1; }"),
        m3("Inner x = 1;", "message Inner { int32 v = 1; int32 w = 2; }"),
        ["FIELD_ADDED #/Inner/2"],
        True,
    ),
    ("name-qualification", m3(f"Status x = 2; {NESTED}"), m3(f".TestMessage.Status x = 2; {NESTED}"), [], True),
    # -- labels
    (
        "optional-to-repeated-string",
        m3("optional string s = 1;"),
        m3("repeated string s = 1;"),
        ["FIELD_STRING_OR_BYTES_LABEL_CHANGED #/TestMessage/1"],
        True,
    ),
    (
        "optional-to-repeated-bytes",
        m3("optional bytes b = 1;"),
        m3("repeated bytes b = 1;"),
        ["FIELD_STRING_OR_BYTES_LABEL_CHANGED #/TestMessage/1"],
        True,
    ),
    (
        "optional-to-repeated-int",
        m3("optional int32 i = 1;"),
        m3("repeated int32 i = 1;"),
        ["FIELD_NUMERIC_LABEL_CHANGED #/TestMessage/1"],
        False,
    ),
    (
        "proto2-optional-to-repeated-double",
        m2("optional double d = 1;"),
        m2("repeated double d = 1;"),
        ["FIELD_NUMERIC_LABEL_CHANGED #/TestMessage/1"],
        False,
    ),
    (
        "optional-to-repeated-message",
        m3(f"optional Status s = 2; {NESTED}"),
        m3(f"repeated Status s = 2; {NESTED}"),
        [],
        True,
    ),
    ("proto3-implicit-to-optional", m3("int32 i = 1;"), m3("optional int32 i = 1;"), [], True),
    # -- oneofs
    (
        "field-moved-into-new-oneof",
        m3("string a = 1; string b = 2;"),
        m3("string a = 1; oneof o { string b = 2; int32 c = 3; }"),
        ["ONEOF_ADDED #/TestMessage/o", "ONEOF_FIELD_ADDED #/TestMessage/o/3"],
        True,
    ),
    (
        "fields-moved-into-new-oneof",
        m3("string a = 1; string b = 2;"),
        m3("oneof o { string a = 1; string b = 2; int32 c = 3; }"),
        [
            "MULTIPLE_FIELDS_MOVED_TO_ONEOF #/TestMessage/o",
            "ONEOF_ADDED #/TestMessage/o",
            "ONEOF_FIELD_ADDED #/TestMessage/o/3",
        ],
        False,
    ),
    (
        "field-moved-into-existing-oneof",
        m3("string a = 1; oneof o { string b = 2; }"),
        m3("oneof o { string a = 1; string b = 2; }"),
        ["FIELD_MOVED_TO_EXISTING_ONEOF #/TestMessage/o"],
        False,
    ),
    (
        "oneof-field-added",
        m3("oneof o { string a = 1; string b = 2; }"),
        m3("oneof o { string a = 1; string b = 2; int32 c = 3; }"),
        ["ONEOF_FIELD_ADDED #/TestMessage/o/3"],
        True,
    ),
    (
        "oneof-field-removed",
        m3("oneof o { string a = 1; string b = 2; int32 c = 3; }"),
        m3("oneof o { string a = 1; string b = 2; }"),
        ["ONEOF_FIELD_REMOVED #/TestMessage/o/3"],
        False,
    ),
    (
        "oneof-removed",
        m3("string a = 1; oneof o { string b = 2; }"),
        m3("string a = 1;"),
        ["ONEOF_REMOVED #/TestMessage/o"],
        True,
    ),  # its fields go with it, as in Confluent
    (
        "oneof-field-type-changed",
        m3("oneof o { string a = 1; int32 b = 2; }"),
        m3("oneof o { string a = 1; float b = 2; }"),
        ["FIELD_SCALAR_KIND_CHANGED #/TestMessage/o/2"],
        False,
    ),
    (
        "field-moved-out-of-oneof",
        m3("oneof o { string a = 1; string b = 2; }"),
        m3("string a = 1; oneof o { string b = 2; }"),
        ["ONEOF_FIELD_MOVED_TO_TOP_LEVEL #/TestMessage/1"],
        True,
    ),
    (
        "oneof-renamed-with-type-change",
        m3("oneof o { int32 a = 1; }"),
        m3("oneof p { sint32 a = 1; }"),
        ["ONEOF_REMOVED #/TestMessage/o", "ONEOF_ADDED #/TestMessage/p", "FIELD_SCALAR_KIND_CHANGED #/TestMessage/p/1"],
        False,
    ),
    # -- oneof membership changes: fields are compared by number across the whole message, whatever
    #    oneof they sit in (Confluent's corpus, "Detect ... oneof ...")
    (
        "field-moved-into-renamed-oneof",
        m3("string a = 1; oneof o { string b = 2; string c = 3; }"),
        m3("oneof p { string a = 1; string b = 2; string c = 3; }"),
        [
            "FIELD_MOVED_TO_EXISTING_ONEOF #/TestMessage/p",
            "ONEOF_REMOVED #/TestMessage/o",
            "ONEOF_ADDED #/TestMessage/p",
        ],
        False,
    ),
    (
        "type-changed-in-renamed-oneof",
        m3("oneof o { float f = 1; int32 x = 2; }"),
        m3("oneof p { float f = 1; string x = 2; }"),
        ["ONEOF_REMOVED #/TestMessage/o", "ONEOF_ADDED #/TestMessage/p", "FIELD_SCALAR_KIND_CHANGED #/TestMessage/p/2"],
        False,
    ),
    (
        "type-changed-moving-out-of-removed-oneof",
        m3("oneof o { float f = 1; int32 x = 2; }"),
        m3("float f = 1; sint64 x = 2;"),
        [
            "ONEOF_REMOVED #/TestMessage/o",
            "ONEOF_FIELD_MOVED_TO_TOP_LEVEL #/TestMessage/1",
            "ONEOF_FIELD_MOVED_TO_TOP_LEVEL #/TestMessage/2",
            "FIELD_SCALAR_KIND_CHANGED #/TestMessage/2",
        ],
        False,
    ),
    (
        "type-changed-moving-into-new-oneof",
        m3("float f = 1; int32 x = 2;"),
        m3("float f = 1; oneof n { sint64 x = 2; }"),
        ["ONEOF_ADDED #/TestMessage/n", "FIELD_SCALAR_KIND_CHANGED #/TestMessage/n/2"],
        False,
    ),
    (
        "oneof-renamed-same-fields",
        m3("oneof o { float f = 1; int32 i = 2; }"),
        m3("oneof p { float f = 1; int32 i = 2; }"),
        ["ONEOF_REMOVED #/TestMessage/o", "ONEOF_ADDED #/TestMessage/p"],
        True,
    ),
    (
        "field-moved-between-oneofs",
        m3("oneof a { int32 f1 = 1; int32 f2 = 2; } oneof b { int32 f3 = 3; }"),
        m3("oneof a { int32 f1 = 1; } oneof b { int32 f3 = 3; int32 f2 = 2; }"),
        ["FIELD_MOVED_TO_EXISTING_ONEOF #/TestMessage/b"],
        False,
    ),
    (
        "field-moved-from-deleted-oneof-into-existing",
        m3("oneof a { int32 fa = 1; } oneof b { int32 fb = 3; }"),
        m3("oneof b { int32 fb = 3; int32 fa = 1; }"),
        ["FIELD_MOVED_TO_EXISTING_ONEOF #/TestMessage/b", "ONEOF_REMOVED #/TestMessage/a"],
        False,
    ),
    (
        "oneofs-merged",
        m3("oneof a { int32 fa = 1; } oneof b { int32 fb = 2; }"),
        m3("oneof c { int32 fa = 1; int32 fb = 2; }"),
        [
            "FIELD_MOVED_TO_EXISTING_ONEOF #/TestMessage/c",
            "ONEOF_REMOVED #/TestMessage/a",
            "ONEOF_REMOVED #/TestMessage/b",
            "ONEOF_ADDED #/TestMessage/c",
        ],
        False,
    ),
    (
        "oneof-split-into-singletons",
        m3("oneof a { int32 fa = 1; int32 fb = 2; }"),
        m3("oneof a { int32 fb = 2; } oneof b { int32 fa = 1; }"),
        ["ONEOF_ADDED #/TestMessage/b"],
        True,
    ),
    (
        "member-dropped-while-oneof-renamed",
        m3("oneof g { int32 a = 1; int32 b = 2; }"),
        m3("oneof g2 { int32 a = 1; }"),
        ["ONEOF_REMOVED #/TestMessage/g", "ONEOF_ADDED #/TestMessage/g2", "ONEOF_FIELD_REMOVED #/TestMessage/g/2"],
        False,
    ),
    (
        "member-moved-to-top-level",
        m3("oneof x { int32 a = 1; int32 b = 2; }"),
        m3("oneof x { int32 a = 1; } int32 b = 2;"),
        ["ONEOF_FIELD_MOVED_TO_TOP_LEVEL #/TestMessage/2"],
        True,
    ),
    (
        "member-moved-to-top-level-with-type-change",
        m3("oneof x { int32 a = 1; int32 b = 2; }"),
        m3("oneof x { int32 a = 1; } string b = 2;"),
        ["ONEOF_FIELD_MOVED_TO_TOP_LEVEL #/TestMessage/2", "FIELD_SCALAR_KIND_CHANGED #/TestMessage/2"],
        False,
    ),
    # -- messages, enums, packages
    (
        "message-added",
        m3("string a = 1;"),
        m3("string a = 1;", "message TestMessage2 { string a = 1; }"),
        ["MESSAGE_ADDED #/TestMessage2"],
        True,
    ),
    (
        "message-removed",
        m3("string a = 1;", "message TestMessage2 { string a = 1; }"),
        m3("string a = 1;"),
        ["MESSAGE_REMOVED #/TestMessage2"],
        False,
    ),
    (
        "message-added-before",
        m3("string a = 1;"),
        f"{P3}message TestMessage2 {{ string a = 1; }}\nmessage TestMessage {{ string a = 1; }}",
        ["MESSAGE_ADDED #/TestMessage2", "MESSAGE_MOVED #/TestMessage"],
        True,
    ),
    (
        "messages-swapped",
        m3("string a = 1;", "message TestMessage2 { string a = 1; }"),
        f"{P3}message TestMessage2 {{ string a = 1; }}\nmessage TestMessage {{ string a = 1; }}",
        ["MESSAGE_MOVED #/TestMessage2", "MESSAGE_MOVED #/TestMessage"],
        True,
    ),
    (
        "enum-const-renamed",
        m3("Status s = 1;", STATUS_ENUM),
        m3("Status s = 1;", "enum Status { ACTIVE = 0; NOT_ACTIVE = 1; }"),
        ["ENUM_CONST_CHANGED #/Status/1"],
        True,
    ),
    (
        "enum-const-added",
        m3("Status s = 1;", STATUS_ENUM),
        m3("Status s = 1;", "enum Status { ACTIVE = 0; INACTIVE = 1; GONE = 2; }"),
        ["ENUM_CONST_ADDED #/Status/2"],
        True,
    ),
    (
        "enum-const-removed",
        m3("Status s = 1;", STATUS_ENUM),
        m3("Status s = 1;", "enum Status { ACTIVE = 0; }"),
        ["ENUM_CONST_REMOVED #/Status/1"],
        True,
    ),
    # not in Confluent's COMPATIBLE_CHANGES: its corpus ("Detect package change") expects incompatible
    (
        "package-changed",
        m3(f"string a = 1; .foo.TestMessage.Status s = 2; {NESTED}", package="foo"),
        m3(f"string a = 1; .bar.TestMessage.Status s = 2; {NESTED}", package="bar"),
        ["PACKAGE_CHANGED #/"],
        False,
    ),
    (
        "recursive-message",
        m3("string a = 1; TestMessage next = 2;"),
        m3("string a = 1; TestMessage next = 2; int32 b = 3;"),
        ["FIELD_ADDED #/TestMessage/3"],
        True,
    ),
    (
        "well-known-type-unchanged",
        'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n'
        "message TestMessage { google.protobuf.Timestamp t = 1; }",
        'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n'
        "message TestMessage { google.protobuf.Timestamp t = 1; string a = 2; }",
        ["FIELD_ADDED #/TestMessage/2"],
        True,
    ),
]

GOOGLE = (
    'syntax = "proto3";\npackage io.confluent.cloud.demo.domain;\noption java_outer_classname = "GoogleImpl";\n'
    "message GoogleHome { int32 deviceID = 1; bool enabled = 2; }"
)
GOOGLE_STRING = GOOGLE.replace("int32 deviceID", "string deviceID")
GOOGLE2 = GOOGLE.replace("domain;", "domain2;")
USE_GOOGLE = 'syntax = "proto3";\nimport "{file}";\nmessage TestMessage {{ .{pkg}.GoogleHome test_string = 1; }}'

# (name, (original text, original refs), (update text, update refs), changes, compatible)
REFERENCE_CASES: list[tuple[str, tuple[str, dict[str, str]], tuple[str, dict[str, str]], list[str], bool]] = [
    (
        "import-changed-incompatibly",
        (USE_GOOGLE.format(file="google.proto", pkg="io.confluent.cloud.demo.domain"), {"google.proto": GOOGLE}),
        (
            USE_GOOGLE.format(file="google2.proto", pkg="io.confluent.cloud.demo.domain"),
            {"google2.proto": GOOGLE_STRING},
        ),
        ["FIELD_SCALAR_KIND_CHANGED #/GoogleHome/1", "FIELD_NAMED_TYPE_CHANGED #/TestMessage/1"],
        False,
    ),
    (
        "moved-to-import",
        (
            f"{P3}message TestMessage {{ GoogleHome test_string = 1; }}\n"
            "message GoogleHome { int32 deviceID = 1; bool enabled = 2; }",
            {},
        ),
        (USE_GOOGLE.format(file="google.proto", pkg="io.confluent.cloud.demo.domain"), {"google.proto": GOOGLE}),
        ["MESSAGE_REMOVED #/GoogleHome"],
        False,
    ),
    (
        "moved-from-import",
        (USE_GOOGLE.format(file="google.proto", pkg="io.confluent.cloud.demo.domain"), {"google.proto": GOOGLE}),
        (
            f"{P3}message TestMessage {{ GoogleHome test_string = 1; }}\n"
            "message GoogleHome { int32 deviceID = 1; bool enabled = 2; }",
            {},
        ),
        ["MESSAGE_ADDED #/GoogleHome"],
        True,
    ),
    (
        "import-with-other-package",
        (USE_GOOGLE.format(file="google.proto", pkg="io.confluent.cloud.demo.domain"), {"google.proto": GOOGLE}),
        (USE_GOOGLE.format(file="google2.proto", pkg="io.confluent.cloud.demo.domain2"), {"google2.proto": GOOGLE2}),
        [],
        True,
    ),
    (
        "same-import-unchanged",
        (USE_GOOGLE.format(file="google.proto", pkg="io.confluent.cloud.demo.domain"), {"google.proto": GOOGLE}),
        (USE_GOOGLE.format(file="google.proto", pkg="io.confluent.cloud.demo.domain"), {"google.proto": GOOGLE}),
        [],
        True,
    ),
]


def _parse(text: str, refs: dict[str, str] | None = None):
    references = tuple(ResolvedReference(name, name, 1, schema, "PROTOBUF") for name, schema in (refs or {}).items())
    return ProtobufType().parse(text, references).parsed


def _assert_case(old, new, changes: list[str], compatible: bool) -> None:
    assert_diff_case(proto_compat, proto_compat.is_compatible_change, old, new, changes, compatible)


@pytest.mark.parametrize(
    ("original", "update", "changes", "compatible"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_diff_kinds_paths_and_verdict(original: str, update: str, changes: list[str], compatible: bool) -> None:
    _assert_case(_parse(original), _parse(update), changes, compatible)


@pytest.mark.parametrize(
    ("original", "update", "changes", "compatible"),
    [c[1:] for c in REFERENCE_CASES],
    ids=[c[0] for c in REFERENCE_CASES],
)
def test_diff_across_references(
    original: tuple[str, dict[str, str]], update: tuple[str, dict[str, str]], changes: list[str], compatible: bool
) -> None:
    _assert_case(_parse(*original), _parse(*update), changes, compatible)


def test_text_and_base64_descriptor_of_one_schema_have_no_differences() -> None:
    schema_type = ProtobufType()
    text = m3("string a = 1; map<string, int32> m = 2; oneof o { int32 x = 3; }", STATUS_ENUM, package="p")
    parsed = schema_type.parse(text)
    from_descriptor = schema_type.parse(schema_type.format(parsed, "serialized"))
    assert proto_compat.diff(parsed.parsed, from_descriptor.parsed) == []


def test_case_count() -> None:
    assert len(CASES) + len(REFERENCE_CASES) >= 50


def test_package_change_is_reported_as_confluent_prints_it() -> None:
    old, new = _parse(m3("string a = 1;", package="foo")), _parse(m3("string a = 1;", package="bar"))
    assert_reported_as(
        proto_compat.check(reader=new, writer=old),
        '{errorType:"PACKAGE_CHANGED", description:"The package at \'#/\' in the new schema does not match the '
        'package in the old schema"}',
        "The package at '#/' in the old schema does not match the package in the new schema",
    )
