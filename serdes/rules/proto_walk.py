"""Field walkers over Protobuf messages, and the plain values CEL and JSONata see of a message.

Fields are matched by number to the schema's descriptor (a registered schema may name a field differently from
the message class); names, full names (``pkg.Message.field``) and inline tags (``(confluent.field_meta).tags``)
come from the schema. Unset fields with presence are skipped; repeated fields apply the rule to each element,
maps to each value. A transform works on a copy of the message it is given.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from serdes.rules.fields import ConditionFailed, FieldInfo, Selection, Visit, Walker
from serdes.wire import read_unsigned_varint

_META_EXTENSION = 1088  # confluent/meta.proto: extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
_META_TAGS = 3  # Meta.tags

_F = FieldDescriptor
# The rules' type name of each field type (a map field, TYPE_MESSAGE, is told apart first); others are "NULL".
_TYPE_NAMES = {
    _F.TYPE_MESSAGE: "RECORD",
    _F.TYPE_ENUM: "ENUM",
    _F.TYPE_STRING: "STRING",
    _F.TYPE_BYTES: "BYTES",
    **dict.fromkeys((_F.TYPE_INT32, _F.TYPE_SINT32, _F.TYPE_UINT32, _F.TYPE_FIXED32, _F.TYPE_SFIXED32), "INT"),
    **dict.fromkeys((_F.TYPE_INT64, _F.TYPE_SINT64, _F.TYPE_UINT64, _F.TYPE_FIXED64, _F.TYPE_SFIXED64), "LONG"),
    _F.TYPE_FLOAT: "FLOAT",
    _F.TYPE_DOUBLE: "DOUBLE",
    _F.TYPE_BOOL: "BOOLEAN",
}


def _is_map(fd: FieldDescriptor) -> bool:
    return fd.type == FieldDescriptor.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry


def _is_repeated(fd: FieldDescriptor) -> bool:
    repeated = getattr(fd, "is_repeated", None)  # protobuf 6 has is_repeated and no longer label
    if repeated is not None:
        return bool(repeated)
    return bool(fd.label == FieldDescriptor.LABEL_REPEATED)


def type_name(fd: FieldDescriptor) -> str:
    return "MAP" if _is_map(fd) else _TYPE_NAMES.get(fd.type, "NULL")


def _fields(data: bytes) -> list[tuple[int, Any]]:
    """(number, value) of each field of a serialized message (length-delimited values as bytes)."""
    out = []
    pos = 0
    while pos < len(data):
        key, pos = read_unsigned_varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = read_unsigned_varint(data, pos)
        elif wire == 2:
            size, pos = read_unsigned_varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            break
        out.append((number, value))
    return out


@lru_cache(maxsize=4096)
def inline_tags(fd: FieldDescriptor) -> tuple[str, ...]:
    """``(confluent.field_meta).tags`` of a field, read from its options' bytes (the extension need not be
    registered in the descriptor's pool)."""
    try:
        options = fd.GetOptions().SerializeToString()
        tags = []
        for number, meta in _fields(options):
            if number == _META_EXTENSION and isinstance(meta, bytes):
                tags += [v.decode() for n, v in _fields(meta) if n == _META_TAGS and isinstance(v, bytes)]
        return tuple(tags)
    except (IndexError, UnicodeDecodeError):
        return ()


class _ProtoWalk:
    def __init__(self, schema: Descriptor, selection: Selection, condition: bool) -> None:
        self.schema = schema
        self.selection = selection
        self.condition = condition
        self._infos: dict[tuple[FieldDescriptor, FieldDescriptor], FieldInfo | None] = {}

    def info(self, fd: FieldDescriptor, schema_fd: FieldDescriptor) -> FieldInfo | None:
        key = (fd, schema_fd)
        if key not in self._infos:
            kind = type_name(fd)
            if _is_repeated(fd) and not _is_map(fd):
                kind = "RECORD" if fd.type == FieldDescriptor.TYPE_MESSAGE else type_name(fd)
            info = self.selection.field(schema_fd.full_name, schema_fd.name, kind, inline_tags(schema_fd))
            self._infos[key] = info if self.selection.selects(info) else None
        return self._infos[key]

    def message(self, msg: Message, schema: Descriptor, visit: Visit) -> None:
        """Applies the rule to ``msg`` in place."""
        for fd in msg.DESCRIPTOR.fields:
            schema_fd = schema.fields_by_number.get(fd.number)
            if schema_fd is None:
                continue
            if fd.has_presence and not msg.HasField(fd.name):
                continue
            if fd.type == FieldDescriptor.TYPE_MESSAGE:
                self.nested(msg, fd, schema_fd, visit)
                continue
            info = self.info(fd, schema_fd)
            if info is None:
                continue
            value = getattr(msg, fd.name)
            if _is_repeated(fd):
                new = [visit(info, v, msg) for v in value]
                if self.condition:
                    continue  # as confluent-kafka: a list of results is never False
                msg.ClearField(fd.name)
                getattr(msg, fd.name).extend(new)
                continue
            new = visit(info, value, msg)
            if self.condition:
                if new is False:
                    raise ConditionFailed(schema_fd.full_name)
            elif new is not value:
                setattr(msg, fd.name, new)

    def nested(self, msg: Message, fd: FieldDescriptor, schema_fd: FieldDescriptor, visit: Visit) -> None:
        value = getattr(msg, fd.name)
        if _is_map(fd):
            value_fd = fd.message_type.fields_by_name["value"]
            schema_value_fd = schema_fd.message_type.fields_by_name.get("value", value_fd)
            if value_fd.type == FieldDescriptor.TYPE_MESSAGE:
                for key in value:
                    self.message(value[key], schema_value_fd.message_type, visit)
                return
            info = self.info(value_fd, schema_fd)
            if info is None:
                return
            changed = {k: visit(info, value[k], msg) for k in value}
            if not self.condition:
                value.clear()
                value.update(changed)
            return
        if _is_repeated(fd):
            for item in value:
                self.message(item, schema_fd.message_type, visit)
            return
        self.message(value, schema_fd.message_type, visit)


def proto_walker(schema: Descriptor, selection: Selection, condition: bool) -> Walker:
    walk = _ProtoWalk(schema, selection, condition)

    def walker(message: Any, visit: Visit) -> Any:
        if not isinstance(message, Message):
            return message
        if not condition:
            copy = type(message)()
            copy.CopyFrom(message)
            message = copy
        walk.message(message, schema, visit)
        return message

    return walker


# -- plain values ---------------------------------------------------------------------------------------------


def to_value(message: Any) -> Any:
    """A message as CEL sees it: a dict of its fields (scalars with their default when unset; messages when
    set), lists and maps as lists and dicts, enums as numbers."""
    if not isinstance(message, Message):
        return message
    out: dict[str, Any] = {}
    for fd in message.DESCRIPTOR.fields:
        value = getattr(message, fd.name)
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            if _is_map(fd):
                out[fd.name] = {k: to_value(v) for k, v in value.items()}
            elif _is_repeated(fd):
                out[fd.name] = [to_value(v) for v in value]
            elif message.HasField(fd.name):
                out[fd.name] = to_value(value)
        elif _is_repeated(fd):
            out[fd.name] = list(value)
        else:
            out[fd.name] = value
    return out


def from_value(value: Any, like: Any) -> Any:
    """A CEL result (a dict of fields) as a message of ``like``'s class; other values are returned as they are."""
    if not isinstance(like, Message) or not isinstance(value, dict):
        return value
    message = type(like)()
    _fill(message, value)
    return message


def _fill(message: Message, value: dict[str, Any]) -> None:
    fields = message.DESCRIPTOR.fields_by_name
    for name, v in value.items():
        fd = fields.get(name)
        if fd is None:
            raise ValueError(f"{message.DESCRIPTOR.full_name} has no field {name!r}")
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            target = getattr(message, name)
            if _is_map(fd):
                value_fd = fd.message_type.fields_by_name["value"]
                for k, item in v.items():
                    if value_fd.type == FieldDescriptor.TYPE_MESSAGE:
                        _fill(target[k], item)
                    else:
                        target[k] = item
            elif _is_repeated(fd):
                for item in v:
                    _fill(target.add(), item)
            else:
                _fill(target, v)
        elif _is_repeated(fd):
            getattr(message, name).extend(v)
        else:
            setattr(message, name, v)


def to_json(message: Any) -> Any:
    """A message in Protobuf's JSON mapping, what JSONata rules see, as in confluent-kafka: JSON (lowerCamelCase)
    field names, fields without presence printed even when unset, 64-bit integers as strings."""
    if not isinstance(message, Message):
        return message
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


def from_json(value: Any, like: Any) -> Any:
    if not isinstance(like, Message) or not isinstance(value, dict):
        return value
    return json_format.ParseDict(value, type(like)())
