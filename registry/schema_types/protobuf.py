"""The PROTOBUF schema type: ``.proto`` text or base64 of a serialized ``FileDescriptorProto``.

confluent-kafka's ProtobufSerializer registers base64 descriptors and reads them back with
``?format=serialized``; people and other tools register ``.proto`` text. Either way the input is
turned into ``.proto`` text (descriptors through :mod:`proto_printer`), compiled by protoc with the
references written as import files, and the resulting descriptor is printed again: that text is the
canonical string, so the same schema sent both ways gets one canonical form.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from compat import protobuf as protobuf_compat
from compat.levels import CompatibilityPolicy
from compat.result import Incompatibility
from registry.schema_types import proto_printer
from registry.schema_types.base import InvalidSchemaError, ParsedSchema, ResolvedReference, SchemaType
from registry.schema_types.protoc import MAIN_FILE, ProtocError, compile_files

#: the file name given to a schema's own descriptor (what Confluent's Java client calls it too)
DEFAULT_FILE_NAME = "default"

# matched against stripped text; no trailing ``\s*``: it would overlap the line breaks inside and make a
# failing match quadratic
_BASE64 = re.compile(r"[A-Za-z0-9+/\r\n]+={0,2}")


@dataclass(frozen=True, slots=True)
class ProtobufDocument:
    """What ``ParsedSchema.parsed`` holds for PROTOBUF (and what ``compat.protobuf`` reads)."""

    #: the schema's own file, named :data:`DEFAULT_FILE_NAME`
    descriptor: descriptor_pb2.FileDescriptorProto
    #: every file it imports, transitively, by import path (user references and well-known types)
    dependencies: dict[str, descriptor_pb2.FileDescriptorProto]
    #: import paths that came from user references (not resolved from the built-in include path)
    referenced: frozenset[str] = frozenset()


def decode_descriptor(schema: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The FileDescriptorProto if ``schema`` is base64 of one, else None (it is then ``.proto`` text)."""
    text = schema.strip()
    if not text or not _BASE64.fullmatch(text):
        return None
    try:
        raw = base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return None
    fd = descriptor_pb2.FileDescriptorProto()
    try:
        fd.ParseFromString(raw)
    except DecodeError:
        return None
    # a word like "syntax" is valid base64 and may decode to junk that parses; real descriptors
    # from a serializer always name at least one message, enum or service
    if not (fd.message_type or fd.enum_type or fd.service or fd.dependency or fd.package):
        return None
    return fd


def to_proto_text(schema: str) -> str:
    """``.proto`` text for a schema given either way."""
    fd = decode_descriptor(schema)
    return schema if fd is None else proto_printer.print_file(fd)


def _import_files(references: tuple[ResolvedReference, ...]) -> dict[str, str]:
    """import path -> .proto text for every reference, transitively (first occurrence wins)."""
    files: dict[str, str] = {}
    stack = list(references)
    while stack:
        ref = stack.pop(0)
        if ref.name in files:
            continue
        files[ref.name] = to_proto_text(ref.schema)
        stack.extend(ref.references)
    return files


class ProtobufType(SchemaType):
    name = "PROTOBUF"

    def parse(self, schema: str, references: tuple[ResolvedReference, ...] = ()) -> ParsedSchema:
        if not isinstance(schema, str) or not schema.strip():
            raise InvalidSchemaError("Protobuf schema is empty")
        imports = tuple(sorted(_import_files(references).items()))
        sent = decode_descriptor(schema)
        text = schema if sent is None else proto_printer.print_file(sent, _compile_imports(sent, imports))
        try:
            fds = compile_files(text, imports)
        except ProtocError as exc:
            raise InvalidSchemaError(str(exc).replace(MAIN_FILE, "schema")) from exc
        files = {f.name: f for f in fds.file}
        main = descriptor_pb2.FileDescriptorProto()
        main.CopyFrom(files.pop(MAIN_FILE))
        main.name = DEFAULT_FILE_NAME
        document = ProtobufDocument(main, files, frozenset(name for name, _ in imports))
        return ParsedSchema(
            schema_type=self.name,
            canonical=proto_printer.print_file(main, files.values()),
            references=references,
            parsed=document,
            names=_names(main),
        )

    def normalize(self, parsed: ParsedSchema) -> ParsedSchema:
        """Imports and references sorted (options are always printed in field-number order); messages,
        fields and enums keep their order: message indexes on the wire and generated code depend on it."""
        document: ProtobufDocument = parsed.parsed
        fd = descriptor_pb2.FileDescriptorProto()
        fd.CopyFrom(document.descriptor)
        _sort_imports(fd)
        normalized = ProtobufDocument(fd, document.dependencies, document.referenced)
        return parsed.normalized(proto_printer.print_file(fd, document.dependencies.values()), normalized)

    def check(
        self, reader: ParsedSchema, writer: ParsedSchema, policy: CompatibilityPolicy = CompatibilityPolicy.STRICT
    ) -> list[Incompatibility]:
        return protobuf_compat.check(reader.parsed, writer.parsed, policy)

    def format(self, parsed: ParsedSchema, fmt: str) -> str | None:
        document: ProtobufDocument = parsed.parsed
        if fmt == "serialized":
            return base64.b64encode(document.descriptor.SerializeToString()).decode("ascii")
        if fmt == "ignore_extensions":
            fd = descriptor_pb2.FileDescriptorProto()
            fd.CopyFrom(document.descriptor)
            _strip_extensions(fd)
            return proto_printer.print_file(fd, document.dependencies.values())
        return None


def _compile_imports(
    fd: descriptor_pb2.FileDescriptorProto, imports: tuple[tuple[str, str], ...]
) -> list[descriptor_pb2.FileDescriptorProto]:
    """The files a sent descriptor imports, compiled, so its custom options can be printed."""
    if not fd.dependency:
        return []
    stub = 'syntax = "proto3";\n' + "".join(f"import {proto_printer.quote(d)};\n" for d in fd.dependency)
    try:
        fds = compile_files(stub, imports)
    except ProtocError as exc:
        raise InvalidSchemaError(str(exc).replace(MAIN_FILE, "schema")) from exc
    return [f for f in fds.file if f.name != MAIN_FILE]


def _names(fd: descriptor_pb2.FileDescriptorProto) -> tuple[str, ...]:
    """``package.FirstMessage`` first, then every message's full name (nested ones included)."""
    prefix = fd.package + "." if fd.package else ""
    names: list[str] = []

    def walk(scope: str, messages: list[descriptor_pb2.DescriptorProto]) -> None:
        for msg in messages:
            if msg.options.map_entry:
                continue
            full = scope + msg.name
            names.append(full)
            walk(full + ".", list(msg.nested_type))

    walk(prefix, list(fd.message_type))
    return tuple(names)


def _sort_imports(fd: descriptor_pb2.FileDescriptorProto) -> None:
    deps = list(fd.dependency)
    public = {deps[i] for i in fd.public_dependency}
    weak = {deps[i] for i in fd.weak_dependency}
    ordered = sorted(set(deps))
    del fd.dependency[:]
    fd.dependency.extend(ordered)
    del fd.public_dependency[:]
    fd.public_dependency.extend(i for i, d in enumerate(ordered) if d in public)
    del fd.weak_dependency[:]
    fd.weak_dependency.extend(i for i, d in enumerate(ordered) if d in weak)


def _strip_extensions(fd: descriptor_pb2.FileDescriptorProto) -> None:
    """Drop extend blocks and extension ranges (the ``ignore_extensions`` format)."""
    del fd.extension[:]

    def walk(messages: list[descriptor_pb2.DescriptorProto]) -> None:
        for msg in messages:
            del msg.extension[:]
            del msg.extension_range[:]
            walk(list(msg.nested_type))

    walk(list(fd.message_type))
