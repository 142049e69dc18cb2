"""Print a ``FileDescriptorProto`` as canonical ``.proto`` text.

The layout follows the one Confluent's registry stores (Wire's ``toSchema`` style): ``syntax``,
``package``, imports, file options, then messages, enums, extend blocks and services, two-space
indents, ``map<K, V>`` for map fields, ``optional`` for proto3 optional fields, ``json_name`` only
when it differs from the default. Two deliberate differences, both so that compiling the printed
text gives back the same descriptor:

* type names are printed fully qualified with a leading dot (``.pkg.Msg``), which never resolves
  to a different type than the descriptor names;
* fields and oneofs are printed in descriptor order (a oneof where its first field is), so field
  order survives a round trip.

Services are kept. Custom options (``[(confluent.field_meta) = { tags: "PII" }]``) are printed when the
files defining them are passed as ``dependencies`` (a descriptor decoded on its own holds them only as
unknown fields); without those files they are left out of the text but stay in the ``serialized`` form.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeAlias

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_encoding, text_format
from google.protobuf import unknown_fields as unknown_fields_module
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

FDP: TypeAlias = descriptor_pb2.FieldDescriptorProto

_SCALARS: dict[int, str] = {
    FDP.TYPE_DOUBLE: "double",
    FDP.TYPE_FLOAT: "float",
    FDP.TYPE_INT64: "int64",
    FDP.TYPE_UINT64: "uint64",
    FDP.TYPE_INT32: "int32",
    FDP.TYPE_FIXED64: "fixed64",
    FDP.TYPE_FIXED32: "fixed32",
    FDP.TYPE_BOOL: "bool",
    FDP.TYPE_STRING: "string",
    FDP.TYPE_BYTES: "bytes",
    FDP.TYPE_UINT32: "uint32",
    FDP.TYPE_SFIXED32: "sfixed32",
    FDP.TYPE_SFIXED64: "sfixed64",
    FDP.TYPE_SINT32: "sint32",
    FDP.TYPE_SINT64: "sint64",
}

_LABELS = {FDP.LABEL_OPTIONAL: "optional", FDP.LABEL_REQUIRED: "required", FDP.LABEL_REPEATED: "repeated"}

MAX_FIELD_NUMBER = 536_870_911  # 2**29 - 1: "max" in message reserved/extension ranges
MAX_ENUM_NUMBER = 2_147_483_647  # "max" in enum reserved ranges

INDENT = "  "


def print_file(
    fd: descriptor_pb2.FileDescriptorProto, dependencies: Iterable[descriptor_pb2.FileDescriptorProto] = ()
) -> str:
    """The canonical ``.proto`` text of ``fd``; ``dependencies`` (the files it imports, transitively)
    are only needed to print custom options."""
    return _FilePrinter(fd, _Options(fd, list(dependencies))).render()


def default_json_name(name: str) -> str:
    """protoc's default ``json_name``: underscores dropped, the letter after each one upper-cased."""
    out: list[str] = []
    upper_next = False
    for ch in name:
        if ch == "_":
            upper_next = True
        elif upper_next:
            out.append(ch.upper())
            upper_next = False
        else:
            out.append(ch)
    return "".join(out)


def quote(text: str) -> str:
    """A ``.proto`` string literal."""
    return '"' + text_encoding.CEscape(text, as_utf8=True) + '"'


class _Options:
    """Renders an ``*Options`` message as ``name = value`` items, custom options included."""

    def __init__(self, fd: descriptor_pb2.FileDescriptorProto, deps: list[descriptor_pb2.FileDescriptorProto]) -> None:
        self._files = [*deps, fd]
        self._pool: descriptor_pool.DescriptorPool | None = None
        self._pool_failed = False

    def lines(self, options: Message, skip: frozenset[str] | set[str] = frozenset()) -> list[str]:
        if len(unknown_fields_module.UnknownFieldSet(options)):
            # custom options this process has no definition for: decode them with the schema's files
            resolved = self._resolve(options)
            if resolved is not None:
                options = resolved
        return _option_lines(options, skip)

    def _resolve(self, options: Message) -> Message | None:
        pool = self._build_pool()
        if pool is None:
            return None
        try:
            desc = pool.FindMessageTypeByName(options.DESCRIPTOR.full_name)
        except KeyError:
            return None
        dynamic = message_factory.GetMessageClass(desc)()
        dynamic.ParseFromString(options.SerializeToString())
        return dynamic

    def _build_pool(self) -> descriptor_pool.DescriptorPool | None:
        if self._pool is None and not self._pool_failed:
            pool = descriptor_pool.DescriptorPool()
            files = {f.name: f for f in self._files}
            if "google/protobuf/descriptor.proto" not in files:
                descriptor_file = descriptor_pb2.FileDescriptorProto()
                descriptor_pb2.DESCRIPTOR.CopyToProto(descriptor_file)
                files[descriptor_file.name] = descriptor_file
            added: set[str] = set()
            try:
                while len(added) < len(files):  # dependencies first
                    ready = [f for n, f in files.items() if n not in added and set(f.dependency) <= added]
                    if not ready:
                        raise TypeError("unresolved imports")
                    for f in ready:
                        pool.Add(f)
                        added.add(f.name)
                self._pool = pool
            except (TypeError, KeyError):
                self._pool_failed = True  # options then print without their custom part
        return self._pool


class _FilePrinter:
    def __init__(self, fd: descriptor_pb2.FileDescriptorProto, options: _Options) -> None:
        self.fd = fd
        self.options = options
        self.syntax = fd.syntax or "proto2"
        # full name (leading dot) -> message, to recognise map entries and groups
        self.messages: dict[str, descriptor_pb2.DescriptorProto] = {}
        prefix = "." + fd.package if fd.package else ""
        for msg in fd.message_type:
            self._index(prefix, msg)

    def _index(self, prefix: str, msg: descriptor_pb2.DescriptorProto) -> None:
        full = f"{prefix}.{msg.name}"
        self.messages[full] = msg
        for nested in msg.nested_type:
            self._index(full, nested)

    # -- file ---------------------------------------------------------------------------------

    def render(self) -> str:
        fd = self.fd
        out: list[str] = []
        if self.syntax == "editions":
            out.append(f'edition = "{_edition_name(fd.edition)}";\n')
        else:
            out.append(f'syntax = "{self.syntax}";\n')
        if fd.package:
            out.append(f"package {fd.package};\n")
        if fd.dependency:
            out.append("\n")
            public = set(fd.public_dependency)
            weak = set(fd.weak_dependency)
            for i, dep in enumerate(fd.dependency):
                modifier = "public " if i in public else "weak " if i in weak else ""
                out.append(f"import {modifier}{quote(dep)};\n")
        options = self.options.lines(fd.options)
        if options:
            out.append("\n")
            out.extend(f"option {line};\n" for line in options)
        for msg in fd.message_type:
            out.append("\n")
            out.extend(self._message(msg, 0))
        for enum in fd.enum_type:
            out.append("\n")
            out.extend(_enum(enum, 0, self.options))
        for block in self._extend_blocks(fd.extension, 0):
            out.append("\n")
            out.extend(block)
        for service in fd.service:
            out.append("\n")
            out.extend(_service(service, self.options))
        return "".join(out)

    # -- messages -----------------------------------------------------------------------------

    def _message(self, msg: descriptor_pb2.DescriptorProto, depth: int, header: str = "") -> list[str]:
        pad = INDENT * depth
        lines = [pad + (header or f"message {msg.name}") + " {\n"]
        lines.extend(self._message_body(msg, depth + 1))
        lines.append(pad + "}\n")
        return lines

    def _message_body(self, msg: descriptor_pb2.DescriptorProto, depth: int) -> list[str]:
        pad = INDENT * depth
        sections: list[list[str]] = []
        reserved = _reserved_lines(msg.reserved_range, msg.reserved_name, inclusive=False)
        if reserved:
            sections.append([pad + line for line in reserved])
        options = self.options.lines(msg.options, skip={"map_entry"})
        if options:
            sections.append([f"{pad}option {line};\n" for line in options])
        members = self._members(msg, depth)
        if members:
            sections.append(members)
        if msg.extension_range:
            parts = [_range(r.start, r.end - 1, MAX_FIELD_NUMBER) for r in msg.extension_range]
            sections.append([f"{pad}extensions {', '.join(parts)};\n"])
        skip = self._inline_nested(msg)
        nested: list[str] = []
        for child in msg.nested_type:
            if child.name not in skip:
                nested.extend(self._message(child, depth))
        for enum in msg.enum_type:
            nested.extend(_enum(enum, depth, self.options))
        if nested:
            sections.append(nested)
        for block in self._extend_blocks(msg.extension, depth):
            sections.append(block)
        out: list[str] = []
        for i, section in enumerate(sections):
            if i:
                out.append("\n")
            out.extend(section)
        return out

    def _inline_nested(self, msg: descriptor_pb2.DescriptorProto) -> set[str]:
        """Nested types printed inside a field instead of on their own: map entries and groups."""
        names = {child.name for child in msg.nested_type if child.options.map_entry}
        for field in msg.field:
            if field.type == FDP.TYPE_GROUP:
                names.add(field.type_name.rsplit(".", 1)[-1])
        return names

    def _members(self, msg: descriptor_pb2.DescriptorProto, depth: int) -> list[str]:
        pad = INDENT * depth
        synthetic = {
            i
            for i in range(len(msg.oneof_decl))
            if all(f.proto3_optional for f in msg.field if f.HasField("oneof_index") and f.oneof_index == i)
        }
        out: list[str] = []
        printed_oneofs: set[int] = set()
        for field in msg.field:
            in_oneof = field.HasField("oneof_index") and field.oneof_index not in synthetic
            if not in_oneof:
                out.extend(self._field(field, depth, in_oneof=False))
                continue
            index = field.oneof_index
            if index in printed_oneofs:
                continue
            printed_oneofs.add(index)
            decl = msg.oneof_decl[index]
            out.append(f"{pad}oneof {decl.name} {{\n")
            out.extend(f"{pad}{INDENT}option {line};\n" for line in self.options.lines(decl.options))
            for member in msg.field:
                if member.HasField("oneof_index") and member.oneof_index == index:
                    out.extend(self._field(member, depth + 1, in_oneof=True))
            out.append(f"{pad}}}\n")
        # a oneof without fields is legal in a descriptor but cannot be written in .proto text
        return out

    def _field(self, field: FDP, depth: int, *, in_oneof: bool) -> list[str]:
        pad = INDENT * depth
        options = self._field_options(field)
        suffix = f" [{', '.join(options)}]" if options else ""
        entry = self.messages.get(field.type_name) if field.type == FDP.TYPE_MESSAGE else None
        if entry is not None and entry.options.map_entry and field.label == FDP.LABEL_REPEATED:
            key, value = entry.field[0], entry.field[1]
            return [f"{pad}map<{_type(key)}, {_type(value)}> {field.name} = {field.number}{suffix};\n"]
        label = self._label(field, in_oneof)
        if field.type == FDP.TYPE_GROUP:
            group = self.messages[field.type_name]
            header = f"{label}group {group.name} = {field.number}{suffix}"
            return self._message(group, depth, header=header)
        return [f"{pad}{label}{_type(field)} {field.name} = {field.number}{suffix};\n"]

    def _label(self, field: FDP, in_oneof: bool) -> str:
        if in_oneof:
            return ""
        if field.label == FDP.LABEL_REPEATED:
            return "repeated "
        if self.syntax == "proto3":
            return "optional " if field.proto3_optional else ""
        if self.syntax == "editions":
            return ""
        return _LABELS[field.label] + " "

    def _field_options(self, field: FDP) -> list[str]:
        options: list[str] = []
        if field.HasField("default_value"):
            options.append(f"default = {_default_literal(field)}")
        if field.HasField("json_name") and field.json_name != default_json_name(field.name):
            options.append(f"json_name = {quote(field.json_name)}")
        options.extend(self.options.lines(field.options))
        return options

    def _extend_blocks(self, extensions: list[FDP], depth: int) -> list[list[str]]:
        """Consecutive extensions of the same message form one ``extend`` block."""
        blocks: list[list[str]] = []
        current: str | None = None
        pad = INDENT * depth
        for ext in extensions:
            if ext.extendee != current:
                if blocks:
                    blocks[-1].append(pad + "}\n")
                blocks.append([f"{pad}extend {ext.extendee} {{\n"])
                current = ext.extendee
            blocks[-1].extend(self._field(ext, depth + 1, in_oneof=False))
        if blocks:
            blocks[-1].append(pad + "}\n")
        return blocks


# -- enums, services, options -------------------------------------------------------------------


def _enum(enum: descriptor_pb2.EnumDescriptorProto, depth: int, opts: _Options) -> list[str]:
    pad = INDENT * depth
    inner = pad + INDENT
    lines = [f"{pad}enum {enum.name} {{\n"]
    reserved = _reserved_lines(enum.reserved_range, enum.reserved_name, inclusive=True)
    lines.extend(inner + line for line in reserved)
    lines.extend(f"{inner}option {line};\n" for line in opts.lines(enum.options))
    for value in enum.value:
        options = opts.lines(value.options)
        suffix = f" [{', '.join(options)}]" if options else ""
        lines.append(f"{inner}{value.name} = {value.number}{suffix};\n")
    lines.append(pad + "}\n")
    return lines


def _service(service: descriptor_pb2.ServiceDescriptorProto, opts: _Options) -> list[str]:
    lines = [f"service {service.name} {{\n"]
    lines.extend(f"{INDENT}option {line};\n" for line in opts.lines(service.options))
    for method in service.method:
        request = ("stream " if method.client_streaming else "") + method.input_type
        response = ("stream " if method.server_streaming else "") + method.output_type
        signature = f"{INDENT}rpc {method.name} ({request}) returns ({response})"
        options = opts.lines(method.options)
        if options:
            lines.append(signature + " {\n")
            lines.extend(f"{INDENT * 2}option {line};\n" for line in options)
            lines.append(INDENT + "}\n")
        else:
            lines.append(signature + ";\n")
    lines.append("}\n")
    return lines


def _type(field: FDP) -> str:
    if field.type in (FDP.TYPE_MESSAGE, FDP.TYPE_ENUM, FDP.TYPE_GROUP):
        return field.type_name
    return _SCALARS[field.type]


def _default_literal(field: FDP) -> str:
    value = field.default_value
    if field.type == FDP.TYPE_STRING:
        return quote(value)
    if field.type == FDP.TYPE_BYTES:
        return f'"{value}"'  # protoc already stores bytes defaults C-escaped
    return value  # numbers, inf/nan, true/false, enum value names: as protoc stores them


def _reserved_lines(ranges: list, names: list[str], *, inclusive: bool) -> list[str]:
    lines: list[str] = []
    if ranges:
        maximum = MAX_ENUM_NUMBER if inclusive else MAX_FIELD_NUMBER
        parts = [_range(r.start, r.end if inclusive else r.end - 1, maximum) for r in ranges]
        lines.append(f"reserved {', '.join(parts)};\n")
    if names:
        lines.append(f"reserved {', '.join(quote(n) for n in names)};\n")
    return lines


def _range(start: int, last: int, maximum: int) -> str:
    if start == last:
        return str(start)
    return f"{start} to {'max' if last >= maximum else last}"


def _option_lines(options: Message, skip: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """``name = value`` for every set option (custom ones as ``(full.name)``), in field-number order;
    a repeated custom option is one item per value, as ``.proto`` text writes it."""
    lines: list[str] = []
    for fdesc, value in options.ListFields():
        if fdesc.name in skip:
            continue
        if not fdesc.is_extension:
            if not fdesc.is_repeated:  # repeated standard ones (uninterpreted_option) have no text form
                lines.append(f"{fdesc.name} = {_option_value(fdesc, value)}")
            continue
        values = list(value) if fdesc.is_repeated else [value]
        lines.extend(f"({fdesc.full_name}) = {_option_value(fdesc, v)}" for v in values)
    return lines


def _option_value(fdesc: FieldDescriptor, value: Any) -> str:
    """``value`` is of the Python type protobuf uses for ``fdesc``'s type."""
    if fdesc.type == fdesc.TYPE_BOOL:
        return "true" if value else "false"
    if fdesc.type == fdesc.TYPE_ENUM:
        enum_value = fdesc.enum_type.values_by_number.get(value)
        return enum_value.name if enum_value is not None else str(value)
    if fdesc.type == fdesc.TYPE_STRING:
        return quote(str(value))
    if fdesc.type == fdesc.TYPE_BYTES:
        return '"' + text_encoding.CEscape(bytes(value), as_utf8=False) + '"'
    if fdesc.type == fdesc.TYPE_MESSAGE:
        return "{ " + text_format.MessageToString(value, as_one_line=True) + " }"
    if fdesc.type in (fdesc.TYPE_FLOAT, fdesc.TYPE_DOUBLE):
        return repr(float(value))
    return str(value)


def _edition_name(edition: int) -> str:
    name = descriptor_pb2.Edition.Name(edition)
    return name.removeprefix("EDITION_")
