"""``schemakit compat check``: the registry's verdicts and messages without a registry.

Parity: each case of the project's compatibility tables (tests/compat, tests/registry) is checked both ways,
the old schema registered on a live server and the new one sent to ``POST /compatibility/…?verbose=true``, and
the two files given to ``compat check --output json``: the answers must be the same JSON, messages included.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.compat.test_avro_compat import CASES as AVRO_CASES
from tests.compat.test_json_schema_diff import CASES as JSON_CASES
from tests.compat.test_levels import B_DEF, A, B
from tests.compat.test_protobuf_diff import CASES as PROTOBUF_CASES
from tests.compat.test_protobuf_diff import REFERENCE_CASES as PROTOBUF_REFERENCE_CASES
from tests.registry.test_avro_schema import INVALID as AVRO_INVALID
from tests.support.cli import Result, run_process

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
EXT = {"AVRO": ".avsc", "JSON": ".json", "PROTOBUF": ".proto"}


@pytest.fixture(scope="module")
def http(registry_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=registry_url, timeout=60, headers=CT) as c:
        yield c


@dataclass
class Question:
    """May ``new`` follow ``history`` (oldest first) at ``level``? ``refs`` are the files the history's schemas
    import, ``new_refs`` those the new one imports."""

    schema_type: str
    history: list[str]
    new: str
    level: str = "BACKWARD"
    refs: dict[str, str] = field(default_factory=dict)
    new_refs: dict[str, str] = field(default_factory=dict)


def server_answer(http: httpx.Client, q: Question) -> dict[str, Any]:
    """Register the history under a fresh subject, then ask the registry about the new schema."""
    subject = f"cc-{uuid.uuid4().hex[:12]}"

    def ref_list(files: dict[str, str]) -> list[dict[str, Any]]:
        out = []
        for name, text in files.items():
            ref_subject = f"{subject}-{name}"
            r = http.post(f"/subjects/{ref_subject}/versions", json={"schema": text, "schemaType": q.schema_type})
            assert r.status_code == 200, r.text
            out.append({"name": name, "subject": ref_subject, "version": 1})
        return out

    assert http.put(f"/config/{subject}", json={"compatibility": "NONE"}).status_code == 200
    old_refs = ref_list(q.refs)
    for text in q.history:
        r = http.post(
            f"/subjects/{subject}/versions", json={"schema": text, "schemaType": q.schema_type, "references": old_refs}
        )
        assert r.status_code == 200, r.text
    assert http.put(f"/config/{subject}", json={"compatibility": q.level}).status_code == 200
    r = http.post(
        f"/compatibility/subjects/{subject}/versions",
        params={"verbose": "true"},
        json={"schema": q.new, "schemaType": q.schema_type, "references": ref_list(q.new_refs)},
    )
    assert r.status_code == 200, r.text
    return r.json()


def offline_answer(cli: Callable[..., Result], tmp: Path, q: Question) -> dict[str, Any]:
    """``compat check OLD NEW OLDER… --output json`` on files holding the history and the new schema."""
    ext = EXT[q.schema_type]
    paths = []
    for i, text in enumerate([*q.history, q.new]):
        path = tmp / f"v{i + 1}{ext}"
        path.write_text(text)
        paths.append(str(path))
    *old_paths, new_path = paths
    ref_args = []
    (tmp / "refs").mkdir(exist_ok=True)
    for name, text in {**q.refs, **q.new_refs}.items():
        path = tmp / "refs" / name
        path.write_text(text)
        ref_args += ["--reference", f"{name}={path}"]
    result = cli(
        "compat",
        "check",
        old_paths[-1],
        new_path,
        *reversed(old_paths[:-1]),
        "--type",
        q.schema_type,
        "--level",
        q.level,
        "--output",
        "json",
        *ref_args,
    )
    assert result.code in (0, 1), result.err
    answer = result.json()
    assert result.code == (0 if answer["is_compatible"] else 1)
    return answer


def the_registrys_answer(http: httpx.Client, cli: Callable[..., Result], tmp: Path, q: Question) -> dict[str, Any]:
    """The offline answer, once it is found to be the same JSON as the registry's."""
    answer = offline_answer(cli, tmp, q)
    assert answer == server_answer(http, q)
    return answer


#: every case of the compatibility tables, with whether the new schema is compatible
CASES = [
    *(
        # BACKWARD: the new schema reads the old one's data
        pytest.param(Question("AVRO", [json.dumps(writer)], json.dumps(reader)), expected == [], id=f"AVRO-{name}")
        for name, reader, writer, expected in AVRO_CASES
    ),
    *(
        pytest.param(Question("JSON", [json.dumps(original)], json.dumps(update)), compatible, id=f"JSON-{name}")
        for name, original, update, _changes, compatible in JSON_CASES
    ),
    *(
        pytest.param(Question("PROTOBUF", [original], update), compatible, id=f"PROTOBUF-{name}")
        for name, original, update, _changes, compatible in PROTOBUF_CASES
    ),
    *(
        pytest.param(Question("PROTOBUF", [old], new, refs=refs, new_refs=new_refs), compatible, id=f"PROTOBUF-{name}")
        for name, (old, refs), (new, new_refs), _changes, compatible in PROTOBUF_REFERENCE_CASES
    ),
]


@pytest.mark.parametrize(("question", "compatible"), CASES)
def test_the_compatibility_cases_as_the_registry_answers(
    http: httpx.Client, cli: Callable[..., Result], tmp_path: Path, question: Question, compatible: bool
) -> None:
    assert the_registrys_answer(http, cli, tmp_path, question)["is_compatible"] is compatible


@pytest.mark.parametrize(
    "level", ["NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"]
)
def test_every_level_over_a_history_as_the_registry_answers(
    http: httpx.Client, cli: Callable[..., Result], tmp_path: Path, level: str
) -> None:
    # tests/compat/test_levels.py's history: v1 [a], v2 [a, b default 0], new [a, b]
    def record(*fields: dict[str, Any]) -> str:
        return json.dumps({"type": "record", "name": "R", "fields": list(fields)})

    question = Question("AVRO", [record(A), record(A, B_DEF)], record(A, B), level)
    answer = the_registrys_answer(http, cli, tmp_path, question)
    assert answer["is_compatible"] is (level not in ("BACKWARD_TRANSITIVE", "FULL_TRANSITIVE"))


@pytest.mark.parametrize(("text", "message"), AVRO_INVALID, ids=[m[:40] for _t, m in AVRO_INVALID])
def test_an_invalid_new_schema_gets_the_registrys_message(
    http: httpx.Client, cli: Callable[..., Result], tmp_path: Path, text: str, message: str
) -> None:
    old = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
    answer = the_registrys_answer(http, cli, tmp_path, Question("AVRO", [old], text))
    assert answer == {"is_compatible": False, "messages": [f"Invalid schema of type AVRO, details: {message}"]}


# ---- exit status and output, as a real process --------------------------------------------------------------

V1 = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}'
V2 = (
    '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},'
    '{"name":"note","type":["null","string"],"default":null}]}'
)
V3_BAD = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"amount","type":"double"}]}'
MISSING_DEFAULT = (
    "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'amount' at path "
    "'/fields/1' in the new schema has no default value and is missing in the old schema', "
    "additionalInfo:'amount'}"
)


def _files(tmp: Path, **texts: str) -> dict[str, str]:
    out = {}
    for name, text in texts.items():
        path = tmp / name.replace("_", ".")
        path.write_text(text)
        out[name] = str(path)
    return out


def test_exit_status_zero_when_compatible_one_when_not(tmp_path: Path) -> None:
    f = _files(tmp_path, v1_avsc=V1, v2_avsc=V2, v3_avsc=V3_BAD)
    ok = run_process("compat", "check", f["v1_avsc"], f["v2_avsc"])
    assert (ok.code, ok.out, ok.err) == (0, f"compatible: {f['v2_avsc']} can follow {f['v1_avsc']} at BACKWARD\n", "")
    bad = run_process("compat", "check", f["v2_avsc"], f["v3_avsc"])
    assert bad.code == 1
    assert bad.out == f"incompatible at BACKWARD with {f['v2_avsc']}:\n  {MISSING_DEFAULT}\n"
    # FORWARD: the old schema reads the new one's data, and ignores the new field
    assert run_process("compat", "check", f["v2_avsc"], f["v3_avsc"], "--level", "forward").code == 0
    # BACKWARD_TRANSITIVE walks back to v1 (given as OLDER): v3 cannot read v1's data either
    older = run_process(
        "compat", "check", f["v2_avsc"], f["v3_avsc"], f["v1_avsc"], "--level", "BACKWARD_TRANSITIVE", "-o", "json"
    )
    assert older.code == 1
    assert older.json()["messages"][1:3] == ["{oldSchemaVersion: 2}", f"{{oldSchema: '{V2}'}}"]


def test_exit_status_two_when_the_check_cannot_run(tmp_path: Path) -> None:
    f = _files(tmp_path, v1_avsc=V1, v2_avsc=V2, broken_avsc="{not json", schema_txt=V1)
    missing = run_process("compat", "check", f["v1_avsc"], str(tmp_path / "nope.avsc"))
    assert missing.code == 2
    assert missing.err == f"schemakit compat check: {tmp_path / 'nope.avsc'}: no such file\n"
    old_broken = run_process("compat", "check", f["broken_avsc"], f["v2_avsc"])
    assert old_broken.code == 2
    assert old_broken.err == (
        f"schemakit compat check: {f['broken_avsc']}: Invalid schema of type AVRO, details: "
        "Invalid JSON at line 1 column 2: Expecting property name enclosed in double quotes\n"
    )
    unknown = run_process("compat", "check", f["v1_avsc"], f["schema_txt"])
    assert unknown.code == 2
    assert "cannot tell the schema type from the extension .txt; pass --type AVRO|PROTOBUF|JSON" in unknown.err
    assert run_process("compat", "check", f["v1_avsc"], f["schema_txt"], "--type", "avro").code == 0
    one_file = run_process("compat", "check", f["v1_avsc"])
    assert (one_file.code, one_file.err) == (
        2,
        "schemakit compat check: give OLD NEW [OLDER …], or --against-dir DIR\n",
    )
    bad_level = run_process("compat", "check", f["v1_avsc"], f["v2_avsc"], "--level", "SIDEWAYS")
    assert bad_level.code == 2 and "invalid choice: 'SIDEWAYS'" in bad_level.err
    # a new schema that is not valid is a "no" (the registry's verbose answer says is_compatible false)
    new_broken = run_process("compat", "check", f["v1_avsc"], f["broken_avsc"])
    assert new_broken.code == 1
    assert "Invalid schema of type AVRO, details: Invalid JSON at line 1 column 2" in new_broken.out


ADDRESS = 'syntax = "proto3";\npackage acme;\nmessage Address { string street = 1; }\n'
ADDRESS_ZIP = 'syntax = "proto3";\npackage acme;\nmessage Address { string street = 1; string zip = 2; }\n'
ADDRESS_INT = 'syntax = "proto3";\npackage acme;\nmessage Address { int64 street = 1; }\n'
CUSTOMER = (
    'syntax = "proto3";\npackage acme;\nimport "common/address.proto";\n'
    "message Customer { string name = 1; Address address = 2; }\n"
)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_against_dir_pairs_files_by_relative_path(tmp_path: Path) -> None:
    old = _tree(
        tmp_path / "release",
        {
            "orders/order.avsc": V1,
            "orders/payment.avsc": V2,
            "legacy/gone.avsc": V1,
            "common/address.proto": ADDRESS,
            "customer.proto": CUSTOMER,
            ".git/ignored.avsc": "{not json",
        },
    )
    new = _tree(
        tmp_path / "work",
        {
            "orders/order.avsc": V2,
            "orders/payment.avsc": V3_BAD,
            "orders/refund.avsc": V1,
            "common/address.proto": ADDRESS_ZIP,
            "customer.proto": CUSTOMER,
        },
    )
    result = run_process("compat", "check", "--against-dir", str(old), "-o", "json", cwd=new)
    assert result.code == 1, result.err
    answer = result.json()
    assert answer["is_compatible"] is False and answer["level"] == "BACKWARD"
    assert [(f["path"], f["status"]) for f in answer["files"]] == [
        ("common/address.proto", "compatible"),
        ("customer.proto", "compatible"),  # its import resolved in each tree: the new field is compatible
        ("legacy/gone.avsc", "removed"),
        ("orders/order.avsc", "compatible"),
        ("orders/payment.avsc", "incompatible"),
        ("orders/refund.avsc", "new"),
    ]
    assert answer["files"][4]["messages"][0] == MISSING_DEFAULT
    table = run_process("compat", "check", "--against-dir", str(old), str(new))
    assert table.code == 1
    assert table.out.splitlines() == [
        "COMPATIBLE    common/address.proto",
        "COMPATIBLE    customer.proto",
        "REMOVED       legacy/gone.avsc",
        "COMPATIBLE    orders/order.avsc",
        "INCOMPATIBLE  orders/payment.avsc",
        f"  {MISSING_DEFAULT}",
        "NEW           orders/refund.avsc",
        "4 checked at BACKWARD: 3 compatible, 1 incompatible, 0 error, 1 new, 1 removed",
    ]


def test_against_dir_resolves_protobuf_imports_in_each_tree(tmp_path: Path) -> None:
    old = _tree(tmp_path / "release", {"common/address.proto": ADDRESS, "customer.proto": CUSTOMER})
    new = _tree(tmp_path / "work", {"common/address.proto": ADDRESS_INT, "customer.proto": CUSTOMER})
    result = run_process("compat", "check", "--against-dir", str(old), str(new), "-o", "json")
    assert result.code == 1, result.err
    statuses = {f["path"]: f["status"] for f in result.json()["files"]}
    # the changed import makes both the imported file and the one importing it incompatible
    assert statuses == {"common/address.proto": "incompatible", "customer.proto": "incompatible"}
    same = run_process("compat", "check", "--against-dir", str(old), str(old))
    assert same.code == 0, same.out + same.err
