"""Protobuf compatibility: Confluent's structural diff over file descriptors.

Confluent defines ``SchemaDiff.compare(original, update)`` and calls a change compatible when every
difference is in :data:`COMPATIBLE_CHANGES`; ``new.isBackwardCompatible(previous)`` diffs
(original=previous, update=new). "Reader can read writer's data" is therefore
``diff(original=writer, update=reader)``: :func:`check` does exactly that, so it plugs into
``compat.levels.check_levels`` (BACKWARD: new reader, old writer; FORWARD: the reverse).

Inputs are duck-typed (this package imports nothing of schemakit): any object with ``descriptor``
(the schema's ``FileDescriptorProto``) and ``dependencies`` (import path -> ``FileDescriptorProto``).
Field type names in descriptors are fully qualified, so no scope resolution is needed.

Paths are Confluent's: ``#/`` + message names + oneof name + field number, e.g. ``#/Outer/Inner/3``.

Fields are compared by number across the whole message, whatever oneof they sit in (as current
Confluent does), so a oneof renamed, merged or split cannot hide a type change or a dropped member.
The comparison of two message types reached through fields is memoized (a type referenced from many
places is compared once), and the walk is bounded by :mod:`compat.limits`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, TypeVar

from google.protobuf import descriptor_pb2

from compat.levels import CompatibilityPolicy
from compat.limits import Walk, no_recursion_error
from compat.result import Incompatibility

FDP: TypeAlias = descriptor_pb2.FieldDescriptorProto
_D = TypeVar("_D")  # a declaration (message, enum) as a scope holds it

PACKAGE_CHANGED = "PACKAGE_CHANGED"
MESSAGE_ADDED = "MESSAGE_ADDED"
MESSAGE_REMOVED = "MESSAGE_REMOVED"
MESSAGE_MOVED = "MESSAGE_MOVED"
ENUM_ADDED = "ENUM_ADDED"
ENUM_REMOVED = "ENUM_REMOVED"
ENUM_CONST_ADDED = "ENUM_CONST_ADDED"
ENUM_CONST_CHANGED = "ENUM_CONST_CHANGED"
ENUM_CONST_REMOVED = "ENUM_CONST_REMOVED"
FIELD_ADDED = "FIELD_ADDED"
FIELD_REMOVED = "FIELD_REMOVED"
FIELD_NAME_CHANGED = "FIELD_NAME_CHANGED"
FIELD_KIND_CHANGED = "FIELD_KIND_CHANGED"
FIELD_SCALAR_KIND_CHANGED = "FIELD_SCALAR_KIND_CHANGED"
FIELD_NAMED_TYPE_CHANGED = "FIELD_NAMED_TYPE_CHANGED"
FIELD_NUMERIC_LABEL_CHANGED = "FIELD_NUMERIC_LABEL_CHANGED"
FIELD_STRING_OR_BYTES_LABEL_CHANGED = "FIELD_STRING_OR_BYTES_LABEL_CHANGED"
REQUIRED_FIELD_ADDED = "REQUIRED_FIELD_ADDED"
REQUIRED_FIELD_REMOVED = "REQUIRED_FIELD_REMOVED"
ONEOF_ADDED = "ONEOF_ADDED"
ONEOF_REMOVED = "ONEOF_REMOVED"
ONEOF_FIELD_ADDED = "ONEOF_FIELD_ADDED"
ONEOF_FIELD_REMOVED = "ONEOF_FIELD_REMOVED"
ONEOF_FIELD_MOVED_TO_TOP_LEVEL = "ONEOF_FIELD_MOVED_TO_TOP_LEVEL"
MULTIPLE_FIELDS_MOVED_TO_ONEOF = "MULTIPLE_FIELDS_MOVED_TO_ONEOF"
FIELD_MOVED_TO_EXISTING_ONEOF = "FIELD_MOVED_TO_EXISTING_ONEOF"

#: Confluent's ``SchemaDiff.COMPATIBLE_CHANGES``. A package change is not in it: generated classes and
#: the full names that ``Any`` fields and type URLs carry change with the package, so Confluent's corpus
#: ("Detect package change") expects it to be incompatible.
COMPATIBLE_CHANGES: frozenset[str] = frozenset(
    {
        MESSAGE_ADDED,
        MESSAGE_MOVED,
        ENUM_ADDED,
        ENUM_REMOVED,
        ENUM_CONST_ADDED,
        ENUM_CONST_CHANGED,
        ENUM_CONST_REMOVED,
        FIELD_ADDED,
        FIELD_REMOVED,
        FIELD_NAME_CHANGED,
        FIELD_STRING_OR_BYTES_LABEL_CHANGED,
        ONEOF_ADDED,
        ONEOF_REMOVED,
        ONEOF_FIELD_ADDED,
        ONEOF_FIELD_MOVED_TO_TOP_LEVEL,
    }
)

#: Confluent's descriptions; ``{reader}`` is the schema that reads (the new one for BACKWARD)
_DESCRIPTIONS = {
    PACKAGE_CHANGED: "The package at '{path}' in the {reader} schema does not match the package in the {writer} schema",
    MESSAGE_REMOVED: "The {reader} schema is missing a MESSAGE type at path '{path}' in the {writer} schema",
    FIELD_KIND_CHANGED: "The type of a field at path '{path}' in the {reader} schema does not match the {writer} "
    "schema",
    FIELD_SCALAR_KIND_CHANGED: "The kind of a SCALAR field at path '{path}' in the {reader} schema does not match "
    "its kind in the {writer} schema",
    FIELD_NAMED_TYPE_CHANGED: "The type of a MESSAGE field at path '{path}' in the {reader} schema does not match "
    "its type in the {writer} schema",
    FIELD_NUMERIC_LABEL_CHANGED: "The label for a NUMERIC field at path '{path}' in the {reader} schema does not "
    "match its label in the {writer} schema",
    # sic: two spaces, as Confluent prints it
    REQUIRED_FIELD_ADDED: "A required field  at path '{path}' in the {reader} schema is missing in the {writer} schema",
    REQUIRED_FIELD_REMOVED: "The {reader} schema is missing a required field at path: '{path}' in the {writer} schema",
    ONEOF_FIELD_REMOVED: "The {reader} schema is missing a oneof field at path '{path}' in the {writer} schema",
    ONEOF_FIELD_MOVED_TO_TOP_LEVEL: "The oneof field at path '{path}' in the {reader} schema was moved out of its "
    "oneof to a top-level field in the {writer} schema",
    MULTIPLE_FIELDS_MOVED_TO_ONEOF: "Multiple fields in the oneof at path '{path}' in the {reader} schema are "
    "outside a oneof in the {writer} schema",
    FIELD_MOVED_TO_EXISTING_ONEOF: "A field in the oneof at path '{path}' in the {reader} schema is outside an "
    "existing oneof in the {writer} schema",
}


class ProtobufSchema(Protocol):
    descriptor: descriptor_pb2.FileDescriptorProto
    dependencies: Mapping[str, descriptor_pb2.FileDescriptorProto]


def is_compatible_change(kind: str) -> bool:
    return kind in COMPATIBLE_CHANGES


def check(
    reader: ProtobufSchema, writer: ProtobufSchema, policy: CompatibilityPolicy = CompatibilityPolicy.STRICT
) -> list[Incompatibility]:
    """Incompatibilities preventing ``reader`` from reading data written with ``writer``. ``policy`` (a
    ``CompatibilityPolicy``) is accepted for a uniform signature: Protobuf checks are the same under all."""
    return [d for d in diff(writer, reader) if d.kind not in COMPATIBLE_CHANGES]


@no_recursion_error
def diff(original: ProtobufSchema, update: ProtobufSchema) -> list[Incompatibility]:
    """Every difference (compatible or not) from ``original`` to ``update``, in Confluent's kinds."""
    ctx = _Context(_TypeIndex(original), _TypeIndex(update))
    _compare_files(ctx, original.descriptor, update.descriptor)
    seen: set[tuple[str, str]] = set()
    out: list[Incompatibility] = []
    for d in ctx.diffs:  # local types are reached both as types and through fields: report once
        if (d.kind, d.path) not in seen:
            seen.add((d.kind, d.path))
            out.append(d)
    return out


# -- type information ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _TypeInfo:
    full_name: str  # without leading dot
    package: str
    file: str
    message: descriptor_pb2.DescriptorProto | None
    enum: descriptor_pb2.EnumDescriptorProto | None

    @property
    def local_name(self) -> str:
        prefix = self.package + "." if self.package else ""
        return self.full_name[len(prefix) :] if self.full_name.startswith(prefix) else self.full_name

    @property
    def is_map(self) -> bool:
        return self.message is not None and self.message.options.map_entry


class _TypeIndex:
    """Every message and enum of a schema and its dependencies, by full name."""

    def __init__(self, schema: ProtobufSchema) -> None:
        self.types: dict[str, _TypeInfo] = {}
        self.files: dict[str, bytes] = {}
        self.syntax: dict[str, str] = {}
        self.main = schema.descriptor.name
        for name, fd in schema.dependencies.items():
            self._add_file(fd, name)
        self._add_file(schema.descriptor, schema.descriptor.name)

    def _add_file(self, fd: descriptor_pb2.FileDescriptorProto, name: str) -> None:
        self.files[name] = fd.SerializeToString(deterministic=True)
        self.syntax[name] = fd.syntax or "proto2"
        scope = fd.package
        for enum in fd.enum_type:
            self._add(_join(scope, enum.name), fd, name, None, enum)
        stack = [(scope, msg) for msg in reversed(fd.message_type)]
        while stack:  # nested messages without recursion: their depth is the file's to choose
            scope, msg = stack.pop()
            full = _join(scope, msg.name)
            self._add(full, fd, name, msg, None)
            for enum in msg.enum_type:
                self._add(_join(full, enum.name), fd, name, None, enum)
            stack.extend((full, nested) for nested in reversed(msg.nested_type))

    def _add(self, full: str, fd: Any, file: str, msg: Any, enum: Any) -> None:
        self.types[full] = _TypeInfo(full, fd.package, file, msg, enum)

    def is_proto3(self, full_name: str) -> bool:
        info = self.types.get(full_name)
        return info is not None and self.syntax.get(info.file) == "proto3"

    def get(self, type_name: str) -> _TypeInfo | None:
        return self.types.get(type_name.lstrip("."))


def _join(scope: str, name: str) -> str:
    return f"{scope}.{name}" if scope else name


# -- context ------------------------------------------------------------------------------------


@dataclass
class _Context:
    original: _TypeIndex
    update: _TypeIndex
    path: list[str] = field(default_factory=list)
    diffs: list[Incompatibility] = field(default_factory=list)
    in_progress: set[tuple[str, str]] = field(default_factory=set)
    walk: Walk = field(default_factory=Walk)
    #: (original type, update type) -> compatible, for pairs compared through fields; their differences
    #: were passed up the first time (every context's differences end up in the check's)
    memo: dict[tuple[str, str], bool] = field(default_factory=dict)
    #: how often a pair already in progress was skipped (a result computed meanwhile is not memoized:
    #: it assumed that pair compatible)
    cuts: list[int] = field(default_factory=lambda: [0])

    def sub(self, path: list[str]) -> _Context:
        return _Context(self.original, self.update, list(path), [], self.in_progress, self.walk, self.memo, self.cuts)

    @contextmanager
    def enter(self, segment: str) -> Iterator[None]:
        self.path.append(segment)
        try:
            yield
        finally:
            self.path.pop()

    def add(self, kind: str, segment: str | None = None) -> None:
        path = "#/" + "/".join([*self.path, segment] if segment is not None else self.path)
        self.walk.report(path)
        template = _DESCRIPTIONS.get(kind, "Compatible change {kind} at '{path}'")
        backward = template.format(path=path, kind=kind, reader="new", writer="old")
        forward = template.format(path=path, kind=kind, reader="old", writer="new")
        self.diffs.append(Incompatibility(kind, path, backward, forward_message=forward, style="protobuf"))

    def compatible(self) -> bool:
        return all(d.kind in COMPATIBLE_CHANGES for d in self.diffs)


# -- rules --------------------------------------------------------------------------------------


def _compare_files(ctx: _Context, original: Any, update: Any) -> None:
    if original.package != update.package:
        ctx.add(PACKAGE_CHANGED)
    _compare_types(
        ctx,
        original.package,
        list(original.message_type),
        list(original.enum_type),
        update.package,
        list(update.message_type),
        list(update.enum_type),
    )


def _compare_types(
    ctx: _Context,
    o_scope: str,
    o_messages: list[descriptor_pb2.DescriptorProto],
    o_enums: list[descriptor_pb2.EnumDescriptorProto],
    u_scope: str,
    u_messages: list[descriptor_pb2.DescriptorProto],
    u_enums: list[descriptor_pb2.EnumDescriptorProto],
) -> None:
    """Messages and enums declared in one scope (a file or a message), matched by name."""
    o_msgs = {m.name: (i, m) for i, m in enumerate(m for m in o_messages if not m.options.map_entry)}
    u_msgs = {m.name: (i, m) for i, m in enumerate(m for m in u_messages if not m.options.map_entry)}
    for (o_index, o_msg), (u_index, u_msg) in _by_name(ctx, o_msgs, u_msgs, MESSAGE_REMOVED, MESSAGE_ADDED):
        _compare_message(ctx, _join(o_scope, o_msg.name), o_msg, _join(u_scope, u_msg.name), u_msg)
        if o_index != u_index:
            # message indexes on the wire refer to the schema of the writer's id
            ctx.add(MESSAGE_MOVED)
    o_en = {e.name: e for e in o_enums}
    u_en = {e.name: e for e in u_enums}
    for o_enum, u_enum in _by_name(ctx, o_en, u_en, ENUM_REMOVED, ENUM_ADDED):
        _compare_enum(ctx, o_enum, u_enum)


def _by_name(
    ctx: _Context, original: Mapping[str, _D], update: Mapping[str, _D], removed: str, added: str
) -> Iterator[tuple[_D, _D]]:
    """The declarations of two scopes matched by name, in name order: a name only one side has is reported as
    ``removed`` or ``added``; a pair is yielded for the caller to compare, inside that name's path."""
    for name in sorted(original.keys() | update.keys()):
        with ctx.enter(name):
            if name not in update:
                ctx.add(removed)
            elif name not in original:
                ctx.add(added)
            else:
                yield original[name], update[name]


def _compare_enum(ctx: _Context, original: Any, update: Any) -> None:
    o_values: dict[int, str] = {}
    for v in original.value:
        o_values.setdefault(v.number, v.name)  # with allow_alias the first name counts
    u_values: dict[int, str] = {}
    for v in update.value:
        u_values.setdefault(v.number, v.name)
    for number in sorted(o_values.keys() | u_values.keys()):
        if number not in u_values:
            ctx.add(ENUM_CONST_REMOVED, str(number))
        elif number not in o_values:
            ctx.add(ENUM_CONST_ADDED, str(number))
        elif o_values[number] != u_values[number]:
            ctx.add(ENUM_CONST_CHANGED, str(number))


@dataclass(frozen=True, slots=True)
class _Field:
    proto: FDP
    label: str | None  # Wire's label: None for proto3 implicit presence, oneof members and maps
    oneof: str | None


def _fields(msg: descriptor_pb2.DescriptorProto, syntax_proto3: bool) -> list[_Field]:
    real_oneofs: dict[int, str] = {}
    for i, decl in enumerate(msg.oneof_decl):
        members = [f for f in msg.field if f.HasField("oneof_index") and f.oneof_index == i]
        if not all(f.proto3_optional for f in members):
            real_oneofs[i] = decl.name
    out: list[_Field] = []
    for f in msg.field:
        oneof = real_oneofs.get(f.oneof_index) if f.HasField("oneof_index") else None
        if oneof is not None:
            label = None
        elif f.label == FDP.LABEL_REPEATED:
            label = "REPEATED"
        elif f.label == FDP.LABEL_REQUIRED:
            label = "REQUIRED"
        elif syntax_proto3 and not f.proto3_optional:
            label = None
        else:
            label = "OPTIONAL"
        out.append(_Field(f, label, oneof))
    return out


def _compare_message(ctx: _Context, o_full: str, original: Any, u_full: str, update: Any) -> None:
    key = (o_full, u_full)
    if key in ctx.in_progress:  # recursive types: the pair is being compared further up
        ctx.cuts[0] += 1
        return
    ctx.in_progress.add(key)
    ctx.walk.down(lambda: "#/" + "/".join(ctx.path))
    _compare_message_body(ctx, o_full, original, u_full, update)
    _compare_types(
        ctx,
        o_full,
        list(original.nested_type),
        list(original.enum_type),
        u_full,
        list(update.nested_type),
        list(update.enum_type),
    )
    ctx.walk.up()
    ctx.in_progress.discard(key)


def _compare_message_body(ctx: _Context, o_full: str, original: Any, u_full: str, update: Any) -> None:
    o_fields = {f.proto.number: f for f in _fields(original, ctx.original.is_proto3(o_full))}
    u_fields = {f.proto.number: f for f in _fields(update, ctx.update.is_proto3(u_full))}
    o_oneofs = _group_oneofs(o_fields.values())
    u_oneofs = _group_oneofs(u_fields.values())

    # a oneof removed with none of its members left anywhere is deleted whole (compatible); one whose
    # members partly survive elsewhere reports the dropped ones below
    deleted = {
        name
        for name, members in o_oneofs.items()
        if name not in u_oneofs and not any(m.proto.number in u_fields for m in members)
    }

    # new mutual exclusivity: the old members of a oneof must all come from one old oneof, or be one
    # old top-level field (new numbers are ignored: old data never set them)
    for name, members in u_oneofs.items():
        origins: set[str | int] = set()
        from_top_level = 0
        for member in members:
            old = o_fields.get(member.proto.number)
            if old is None:
                continue
            if old.oneof is not None:
                origins.add(old.oneof)
            else:
                origins.add(member.proto.number)
                from_top_level += 1
        if len(origins) > 1:
            with ctx.enter(name):
                ctx.add(MULTIPLE_FIELDS_MOVED_TO_ONEOF if from_top_level > 1 else FIELD_MOVED_TO_EXISTING_ONEOF)

    for name in sorted(o_oneofs.keys() | u_oneofs.keys()):
        if name not in u_oneofs:
            ctx.add(ONEOF_REMOVED, name)
        elif name not in o_oneofs:
            ctx.add(ONEOF_ADDED, name)

    for number in sorted(o_fields.keys() | u_fields.keys()):
        o_field, u_field = o_fields.get(number), u_fields.get(number)
        if u_field is None:
            assert o_field is not None
            if o_field.oneof is None:
                ctx.add(REQUIRED_FIELD_REMOVED if o_field.label == "REQUIRED" else FIELD_REMOVED, str(number))
            elif o_field.oneof not in deleted:
                ctx.add(ONEOF_FIELD_REMOVED, f"{o_field.oneof}/{number}")
        elif o_field is None:
            if u_field.oneof is not None:
                ctx.add(ONEOF_FIELD_ADDED, f"{u_field.oneof}/{number}")
            else:
                ctx.add(REQUIRED_FIELD_ADDED if u_field.label == "REQUIRED" else FIELD_ADDED, str(number))
        else:
            if o_field.oneof is not None and u_field.oneof is None:
                ctx.add(ONEOF_FIELD_MOVED_TO_TOP_LEVEL, str(number))
            # compared whatever oneof either sits in, at the field's place in the update
            with ctx.enter(f"{u_field.oneof}/{number}" if u_field.oneof is not None else str(number)):
                _compare_field(ctx, o_field, u_field)


def _group_oneofs(fields: Iterable[_Field]) -> dict[str, list[_Field]]:
    groups: dict[str, list[_Field]] = {}
    for f in fields:
        if f.oneof is not None:
            groups.setdefault(f.oneof, []).append(f)
    return groups


def _compare_field(ctx: _Context, original: _Field, update: _Field) -> None:
    if original.proto.name != update.proto.name:
        ctx.add(FIELD_NAME_CHANGED)
    _compare_field_types(ctx, original.label, original.proto, update.label, update.proto)


_GENERAL_NUMBER = "GENERAL_NUMBER"
_SCALAR_KINDS = {
    FDP.TYPE_INT32: _GENERAL_NUMBER,
    FDP.TYPE_INT64: _GENERAL_NUMBER,
    FDP.TYPE_UINT32: _GENERAL_NUMBER,
    FDP.TYPE_UINT64: _GENERAL_NUMBER,
    FDP.TYPE_BOOL: _GENERAL_NUMBER,
    FDP.TYPE_ENUM: _GENERAL_NUMBER,  # enums are varints on the wire
    FDP.TYPE_SINT32: "SIGNED_NUMBER",
    FDP.TYPE_SINT64: "SIGNED_NUMBER",
    FDP.TYPE_STRING: "STRING_OR_BYTES",
    FDP.TYPE_BYTES: "STRING_OR_BYTES",
    FDP.TYPE_FIXED32: "FIXED32",
    FDP.TYPE_SFIXED32: "FIXED32",
    FDP.TYPE_FIXED64: "FIXED64",
    FDP.TYPE_SFIXED64: "FIXED64",
    FDP.TYPE_FLOAT: "FLOAT",
    FDP.TYPE_DOUBLE: "DOUBLE",
}


def _kind(index: _TypeIndex, proto: FDP) -> str:
    if proto.type in (FDP.TYPE_MESSAGE, FDP.TYPE_GROUP):
        info = index.get(proto.type_name)
        return "MAP" if info is not None and info.is_map else "MESSAGE"
    return "SCALAR"


def _compare_field_types(ctx: _Context, o_label: str | None, original: FDP, u_label: str | None, update: FDP) -> None:
    o_kind, u_kind = _kind(ctx.original, original), _kind(ctx.update, update)
    if o_kind != u_kind:
        ctx.add(FIELD_KIND_CHANGED)
    elif o_kind == "SCALAR":
        o_scalar, u_scalar = _SCALAR_KINDS[original.type], _SCALAR_KINDS[update.type]
        if o_scalar != u_scalar:
            ctx.add(FIELD_SCALAR_KIND_CHANGED)
        elif o_label is not None and u_label is not None and o_label != u_label:
            # packed repeated numbers cannot be read as a singular value (strings/bytes can)
            ctx.add(
                FIELD_STRING_OR_BYTES_LABEL_CHANGED if o_scalar == "STRING_OR_BYTES" else FIELD_NUMERIC_LABEL_CHANGED
            )
    elif o_kind == "MAP":
        o_entry = ctx.original.get(original.type_name)
        u_entry = ctx.update.get(update.type_name)
        assert o_entry is not None and u_entry is not None and o_entry.message and u_entry.message
        for o_part, u_part in zip(o_entry.message.field, u_entry.message.field, strict=False):
            _compare_field_types(ctx, None, o_part, None, u_part)
    else:
        _compare_message_types(ctx, original, update)


def _compare_message_types(ctx: _Context, original: FDP, update: FDP) -> None:
    o_info, u_info = ctx.original.get(original.type_name), ctx.update.get(update.type_name)
    if o_info is None or u_info is None or o_info.message is None or u_info.message is None:
        if original.type_name != update.type_name:
            ctx.add(FIELD_NAMED_TYPE_CHANGED)
        return
    if o_info.local_name != u_info.local_name:
        ctx.add(FIELD_NAMED_TYPE_CHANGED)
        return
    same_dependency = (
        o_info.file != ctx.original.main
        and u_info.file != ctx.update.main
        and ctx.original.files.get(o_info.file) == ctx.update.files.get(u_info.file)
    )
    if same_dependency:  # the same imported file on both sides: nothing can differ
        return
    key = (o_info.full_name, u_info.full_name)
    compatible = ctx.memo.get(key)
    if compatible is None:
        # paths inside a type start at its own name: its differences are the same wherever it is reached
        sub = ctx.sub(o_info.local_name.split("."))
        cuts = ctx.cuts[0]
        _compare_message(sub, o_info.full_name, o_info.message, u_info.full_name, u_info.message)
        ctx.diffs.extend(sub.diffs)
        compatible = sub.compatible()
        if ctx.cuts[0] == cuts:
            ctx.memo[key] = compatible
    if not compatible:
        ctx.add(FIELD_NAMED_TYPE_CHANGED)
