"""Avro schemas used across the API tests."""

from __future__ import annotations

import json


def record(name: str, *fields: tuple[str, object] | tuple[str, object, object], namespace: str | None = None) -> str:
    """A record schema as compact JSON; a field is (name, type) or (name, type, default)."""
    fs = []
    for f in fields:
        d: dict[str, object] = {"name": f[0], "type": f[1]}
        if len(f) == 3:
            d["default"] = f[2]
        fs.append(d)
    obj: dict[str, object] = {"type": "record", "name": name}
    if namespace:
        obj["namespace"] = namespace
    obj["fields"] = fs
    return json.dumps(obj)


V1 = record("User", ("name", "string"))
V2 = record("User", ("name", "string"), ("age", "int", 0))  # backward compatible with V1
V3_BAD = record("User", ("name", "string"), ("email", "string"))  # new field without default: not backward
