"""Field walkers over JSON documents, led by their JSON Schema: ``properties`` are fields (full names
``$.a.b``), ``items`` apply to each element, ``$ref`` is followed (in the document, or to a referenced schema by
name), ``allOf`` applies every part, ``oneOf``/``anyOf`` the first (any) part the value validates against, a
``type`` list the first type the value has. Field rules run on string, number, integer, boolean and enum
properties that are present and not null."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from serdes.rules.fields import ConditionFailed, Selection, Visit, Walker

_TYPES = {
    "string": "STRING",
    "integer": "INT",
    "number": "DOUBLE",
    "boolean": "BOOLEAN",
    "null": "NULL",
    "array": "ARRAY",
}
_VISITED = frozenset({"ENUM", "STRING", "INT", "DOUBLE", "BOOLEAN"})
#: what a part of a document keeps of its root to validate alone: where its ``$ref``s point, and the dialect
_ROOT_KEYWORDS = ("$schema", "$id", "$defs", "definitions")


def type_name(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "COMBINED"
    if schema.get("const") is not None or schema.get("enum") is not None:
        return "ENUM"
    kind = schema.get("type")
    if kind == "object":
        return "RECORD" if schema.get("properties") else "MAP"
    if isinstance(kind, str) and kind in _TYPES:
        return _TYPES[kind]
    return "RECORD" if schema.get("properties") is not None else "NULL"


def _has_type(value: Any, kind: str) -> bool:
    t = type(value)
    return {
        "string": t is str,
        "integer": t is int,
        "number": (t is int or t is float),
        "boolean": t is bool,
        "null": value is None,
        "array": t is list,
        "object": t is dict,
    }.get(kind, False)


class _JsonWalk:
    def __init__(self, doc: Any, references: Mapping[str, Any], selection: Selection, condition: bool) -> None:
        self.doc = doc
        self.references = references
        self.selection = selection
        self.condition = condition
        self.validators: dict[tuple[int, int], Any] = {}

    def resolve(self, ref: str, base: Any) -> Any:
        doc, _, pointer = ref.partition("#")
        target = self.references.get(doc) if doc else base
        if target is None:
            target = self.references.get(ref)
            if target is None:
                raise LookupError(f"cannot resolve $ref {ref!r}")
            return target
        for part in [p for p in pointer.split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            target = target[int(part)] if isinstance(target, list) else target[part]
        return target

    def valid(self, value: Any, schema: Any, base: Any) -> bool:
        """Whether ``value`` validates against the ``oneOf``/``anyOf`` part ``schema`` of document ``base``.
        The part is checked inside a copy of the document's root keywords (``$defs``, ``definitions``,
        ``$schema``, ``$id``), so its ``$ref``s, and the ``$ref``s of what they point at, resolve as they do in
        the document."""
        from jsonschema.validators import validator_for

        key = (id(schema), id(base))
        validator = self.validators.get(key)
        if validator is None:
            root = base if isinstance(base, dict) else {}
            wrapper = {k: root[k] for k in _ROOT_KEYWORDS if k in root}
            wrapper["allOf"] = [schema]
            cls = validator_for(self.doc if isinstance(self.doc, dict) else {})
            validator = self.validators[key] = cls(wrapper)
        try:
            return bool(validator.is_valid(value))
        except Exception:
            return False

    def walk(
        self,
        schema: Any,
        value: Any,
        path: str,
        field: tuple[str, str, Any] | None,
        containing: Any,
        visit: Visit,
        base: Any,
    ) -> Any:
        if value is None or not isinstance(schema, dict):
            return value
        kind = schema.get("type")
        if isinstance(kind, list) and kind:
            for k in kind:
                if _has_type(value, k):
                    return self.walk({**schema, "type": k}, value, path, field, containing, visit, base)
        parts = [schema.get(k) for k in ("allOf", "anyOf", "oneOf")]
        if any(p is not None for p in parts):
            all_of, any_of, one_of = parts
            if all_of is not None:
                for sub in all_of:
                    value = self.walk(sub, value, path, field, containing, visit, base)
            elif one_of is not None or any_of is not None:
                for sub in one_of if one_of is not None else any_of or ():
                    if self.valid(value, sub, base):
                        value = self.walk(sub, value, path, field, containing, visit, base)
                        if one_of is not None:
                            break
            if isinstance(value, dict) and schema.get("properties") is not None:
                value = self.record(schema, value, path, visit, base)
            if isinstance(value, list) and schema.get("items") is not None:
                value = [self.walk(schema["items"], v, path, field, containing, visit, base) for v in value]
            return value
        if schema.get("items") is not None and isinstance(value, list):
            return [self.walk(schema["items"], v, path, field, containing, visit, base) for v in value]
        if "$ref" in schema:
            target = self.resolve(schema["$ref"], base)
            new_base = target if schema["$ref"].split("#")[0] else base
            return self.walk(target, value, path, field, containing, visit, new_base)
        name = type_name(schema)
        if name == "RECORD":
            return self.record(schema, value, path, visit, base) if isinstance(value, dict) else value
        if name in _VISITED and field is not None:
            full_name, prop, inline = field
            info = self.selection.field(full_name, prop, name, inline)
            if self.selection.selects(info):
                return visit(info, value, containing)
        return value

    def record(self, schema: dict[str, Any], value: dict[str, Any], path: str, visit: Visit, base: Any) -> Any:
        out = value
        for prop, sub in (schema.get("properties") or {}).items():
            if not isinstance(sub, dict):
                continue
            old = out.get(prop)
            if old is None:
                continue
            full_name = f"{path}.{prop}"
            inline = sub.get("confluent:tags") or ()
            new = self.walk(sub, old, full_name, (full_name, prop, inline), out, visit, base)
            if self.condition:
                if new is False:
                    raise ConditionFailed(full_name)
            elif new is not old:
                if out is value:
                    out = dict(value)
                out[prop] = new
        return out


def json_walker(doc: Any, references: Mapping[str, Any], selection: Selection, condition: bool) -> Walker:
    """The walker for documents of the JSON Schema ``doc`` (``references``: referenced schemas by name)."""
    walk = _JsonWalk(doc, references, selection, condition)
    return lambda message, visit: walk.walk(doc, message, "$", None, None, visit, doc)
