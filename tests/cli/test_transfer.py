"""``schemakit registry export | import | copy``: a registry's contents moved with ids, versions, deletion
states, config and mode intact, proven by every GET of the copy answering the same bytes as the original."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.cli.test_compat_check import V1, V2, V3_BAD
from tests.support.cli import run_process
from tests.support.registry_process import RegistryProcess

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
ADDRESS = 'syntax = "proto3";\npackage acme;\nmessage Address { string street = 1; }\n'
CUSTOMER = 'syntax = "proto3";\npackage acme;\nimport "acme/address.proto";\nmessage Customer { acme.Address a = 1; }\n'
COMMON_JSON = '{"type":"object","properties":{"id":{"type":"integer"}}}'
EVENT_JSON = '{"type":"object","properties":{"common":{"$ref":"common.json"},"name":{"type":"string"}}}'
RULES = {
    "domainRules": [{"name": "positive", "kind": "CONDITION", "mode": "WRITE", "type": "CEL", "expr": "message.id > 0"}]
}
WEIRD = "weird subject %/é"


def _ok(resp: httpx.Response) -> httpx.Response:
    assert resp.status_code == 200, resp.text
    return resp


def populate(url: str) -> None:
    """Every kind of state an export must carry."""
    with httpx.Client(base_url=url, headers=CT, timeout=30) as c:

        def register(subject: str, schema: str, **fields: Any) -> None:
            _ok(c.post(f"/subjects/{quote(subject, safe='')}/versions", json={"schema": schema, **fields}))

        def imported(subject: str) -> list[dict[str, Any]]:
            """The references of a schema that imports version 1 of ``subject`` under its own name."""
            return [{"name": subject, "subject": subject, "version": 1}]

        _ok(c.put("/config/orders-value", json={"compatibility": "NONE"}))
        for text in (V1, V2, V3_BAD):
            register("orders-value", text)
        _ok(c.delete("/subjects/orders-value/versions/2"))  # soft-deleted in the middle
        register("old-value", V1)  # the same schema: the same id
        _ok(c.delete("/subjects/old-value"))  # a whole subject soft-deleted
        _ok(c.put("/config/tmp-value", json={"compatibility": "NONE"}))
        for text in (V3_BAD, V1):
            register("tmp-value", text)
        _ok(c.delete("/subjects/tmp-value/versions/1"))
        _ok(c.delete("/subjects/tmp-value/versions/1", params={"permanent": "true"}))  # hard-deleted: absent
        register("acme/address.proto", ADDRESS, schemaType="PROTOBUF")
        register("customers-value", CUSTOMER, schemaType="PROTOBUF", references=imported("acme/address.proto"))
        _ok(c.put("/mode/customers-value", json={"mode": "READONLY"}))
        register("common.json", COMMON_JSON, schemaType="JSON")
        register("events-value", EVENT_JSON, schemaType="JSON", references=imported("common.json"))
        register("rules-value", V2, metadata={"properties": {"owner": "team-a"}}, ruleSet=RULES)
        register(WEIRD, '"string"')
        _ok(c.put("/config", json={"compatibility": "FULL_TRANSITIVE"}))


def every_get(url: str) -> dict[str, tuple[int, bytes]]:
    """(status, body) of every read the original answers: lists, versions with and without deleted, by id,
    referencedby, config and mode, for every subject and id it holds."""
    with httpx.Client(base_url=url, timeout=30) as c:
        subjects = c.get("/subjects", params={"deleted": "true"}).json()
        paths = ["/subjects", "/subjects?deleted=true", "/config", "/mode", "/schemas", "/schemas?deleted=true"]
        ids: set[int] = set()
        for subject in subjects:
            s = "/subjects/" + quote(subject, safe="")
            paths += [
                f"{s}/versions",
                f"{s}/versions?deleted=true",
                f"/config/{quote(subject, safe='')}",
                f"/mode/{quote(subject, safe='')}",
                f"/config/{quote(subject, safe='')}?defaultToGlobal=true",
            ]
            for v in c.get(f"{s}/versions", params={"deleted": "true"}).json():
                paths += [
                    f"{s}/versions/{v}",
                    f"{s}/versions/{v}?deleted=true",
                    f"{s}/versions/{v}/referencedby",
                    f"{s}/versions/{v}/schema?deleted=true",
                ]
                ids.add(c.get(f"{s}/versions/{v}", params={"deleted": "true"}).json()["id"])
        for i in sorted(ids):
            paths += [
                f"/schemas/ids/{i}",
                f"/schemas/ids/{i}/versions?deleted=true",
                f"/schemas/ids/{i}/subjects?deleted=true",
            ]
        return {p: (r.status_code, r.content) for p in paths for r in [c.get(p)]}


def answers(url: str, paths: list[str]) -> dict[str, tuple[int, bytes]]:
    with httpx.Client(base_url=url, timeout=30) as c:
        return {p: (r.status_code, r.content) for p in paths for r in [c.get(p)]}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    rp = RegistryProcess.on_sqlite(tmp_path_factory.mktemp("source-registry")).start()
    populate(rp.url)
    yield rp.url
    rp.stop()


@pytest.fixture(scope="module")
def export_dir(source: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "backup"
    result = run_process("registry", "export", "--url", source, "--out", str(out))
    assert result.code == 0, result.err
    assert result.out == f"exported 11 schema versions (2 soft-deleted, 9 ids) of 9 subjects to {out}\n"
    assert result.err == ""  # not a terminal: no progress line
    return out


def test_export_writes_one_line_per_version_and_readable_files(export_dir: Path) -> None:
    lines = [json.loads(line) for line in (export_dir / "schemas.jsonl").read_text().splitlines()]
    assert len(lines) == 11
    keys = [(v["subject"], v["version"], v["deleted"]) for v in lines]
    assert ("tmp-value", 1, True) not in keys and ("tmp-value", 2, False) in keys  # hard-deleted: absent
    assert ("orders-value", 2, True) in keys and ("old-value", 1, True) in keys
    # referenced versions come before the versions that reference them
    assert keys.index(("acme/address.proto", 1, False)) < keys.index(("customers-value", 1, False))
    assert keys.index(("common.json", 1, False)) < keys.index(("events-value", 1, False))
    rules = next(v for v in lines if v["subject"] == "rules-value")
    assert (rules["metadata"], rules["ruleSet"]) == ({"properties": {"owner": "team-a"}}, RULES)
    manifest = json.loads((export_dir / "registry.json").read_text())
    assert manifest["config"] == {"compatibilityLevel": "FULL_TRANSITIVE"}
    assert manifest["mode"] == "READWRITE"
    assert manifest["subjects"]["customers-value"] == {"config": None, "mode": "READONLY"}
    assert manifest["subjects"]["orders-value"] == {"config": {"compatibilityLevel": "NONE"}, "mode": None}
    readable = sorted(
        str(p.relative_to(export_dir / "schemas")) for p in (export_dir / "schemas").rglob("*") if p.is_file()
    )
    assert readable == sorted(
        [
            "acme%2Faddress.proto/1.proto",
            "common.json/1.json",
            "customers-value/1.proto",
            "events-value/1.json",
            "old-value/1.deleted.avsc",
            "orders-value/1.avsc",
            "orders-value/2.deleted.avsc",
            "orders-value/3.avsc",
            "rules-value/1.avsc",
            "tmp-value/2.avsc",
            "weird%20subject%20%25%2F%C3%A9/1.avsc",
        ]
    )
    assert (export_dir / "schemas/customers-value/1.proto").read_text().startswith('syntax = "proto3";')
    again = run_process("registry", "export", "--url", "http://127.0.0.1:1", "--out", str(export_dir))
    assert again.code == 2 and "exists and is not an empty directory" in again.err


def test_import_into_a_fresh_registry_answers_every_get_the_same(
    source: str, export_dir: Path, start_registry: Callable[..., RegistryProcess]
) -> None:
    target = start_registry().url
    before = every_get(source)
    empty = answers(target, list(before))
    dry = run_process("registry", "import", "--url", target, "--in", str(export_dir), "--dry-run")
    assert dry.code == 0, dry.err
    assert dry.out.splitlines()[0] == "would set global mode IMPORT (keeps ids and versions)"
    assert "would register 'orders-value' version 2 id 2 AVRO (soft-deleted below)" in dry.out.splitlines()
    assert dry.out.splitlines()[-1] == (
        "dry run, nothing changed: would register 11 schema versions in 9 subjects, "
        "soft-delete 2 versions, set 3 configs, set 3 modes; "
        "0 versions were there already"
    )
    assert answers(target, list(before)) == empty  # the dry run changed nothing
    done = run_process("registry", "import", "--url", target, "--in", str(export_dir))
    assert done.code == 0, done.err
    after = answers(target, list(before))
    assert {p: a for p, a in after.items() if a != before[p]} == {}
    assert every_get(target) == before  # and nothing more than the original holds


def test_import_refuses_a_registry_that_is_not_empty_unless_forced(
    export_dir: Path, start_registry: Callable[..., RegistryProcess]
) -> None:
    target = start_registry().url
    assert run_process("registry", "import", "--url", target, "--in", str(export_dir)).code == 0
    state = every_get(target)
    refused = run_process("registry", "import", "--url", target, "--in", str(export_dir))
    assert refused.code == 2
    assert refused.err == (
        f"schemakit registry import: the registry at {target} is not empty: 9 subjects, 11 schema versions "
        "(acme/address.proto, common.json, customers-value, …). Import restores into an empty registry; pass "
        "--force to import into this one (versions it already has with the same id and schema are skipped, any "
        "other clash stops the import before it writes anything)\n"
    )
    forced = run_process("registry", "import", "--url", target, "--in", str(export_dir), "--force")
    assert (forced.code, forced.out) == (0, "done: change nothing; 11 versions were there already\n")
    assert every_get(target) == state


def test_a_clash_stops_a_forced_import_before_it_writes(
    export_dir: Path, start_registry: Callable[..., RegistryProcess]
) -> None:
    target = start_registry().url
    _ok(httpx.post(f"{target}/subjects/other-value/versions", json={"schema": '"long"'}, headers=CT))  # takes id 1
    state = every_get(target)
    clash = run_process("registry", "import", "--url", target, "--in", str(export_dir), "--force")
    assert clash.code == 2
    # the three versions of the export that have id 1 (the same schema in three subjects), in import order
    assert clash.err.splitlines() == [
        "schemakit registry import: nothing was changed: 3 clashes with what the target holds:",
        *(
            f"schemakit registry import:   subject '{s}' version {v}: id 1 belongs to another schema in the target "
            "(subject 'other-value' version 1)"
            for s, v in (("old-value", 1), ("orders-value", 1), ("tmp-value", 2))
        ),
    ]
    assert every_get(target) == state


def test_copy_moves_everything_without_files(source: str, start_registry: Callable[..., RegistryProcess]) -> None:
    target = start_registry().url
    copied = run_process("registry", "copy", "--from", source, "--to", target, "-o", "json")
    assert copied.code == 0, copied.err
    calls = copied.json()["calls"]
    assert [c["kind"] for c in calls].count("register") == 11
    assert calls[0] == {
        "kind": "mode",
        "description": "set global mode IMPORT (keeps ids and versions)",
        "method": "PUT",
        "path": "/mode",
        "body": {"mode": "IMPORT"},
    }
    assert every_get(target) == every_get(source)


def test_an_unreadable_export_is_named(tmp_path: Path) -> None:
    missing = run_process("registry", "import", "--url", "http://127.0.0.1:1", "--in", str(tmp_path))
    assert missing.code == 2
    assert missing.err == (
        f"schemakit registry import: {tmp_path}/registry.json: missing; is {tmp_path} a directory "
        "written by `schemakit registry export`?\n"
    )
    (tmp_path / "registry.json").write_text(json.dumps({"format": "schemakit-registry-export", "format_version": 1}))
    (tmp_path / "schemas.jsonl").write_text('{"subject": "a", "version": 1}\n')
    bad_line = run_process("registry", "import", "--url", "http://127.0.0.1:1", "--in", str(tmp_path))
    assert bad_line.code == 2
    assert bad_line.err == (
        f"schemakit registry import: {tmp_path}/schemas.jsonl:1: not a schema version (KeyError: 'id')\n"
    )


def _with_terminal(*args: str) -> tuple[int, str]:
    """Run ``schemakit ARGS`` with stderr on a pseudo-terminal; returns the exit status and what it drew there."""
    import os
    import pty
    import subprocess
    import sys

    from tests.support import REPO_ROOT

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "schemakit", *args],
        stdout=subprocess.DEVNULL,
        stderr=slave,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    os.close(slave)
    drawn = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    return proc.wait(60), drawn.decode()


def test_progress_is_drawn_on_a_terminal_only_unless_quiet(source: str, tmp_path: Path) -> None:
    code, drawn = _with_terminal("registry", "export", "--url", source, "--out", str(tmp_path / "a"))
    assert code == 0
    assert "\rreading subjects         [##############################] 9/9 100%" in drawn
    assert "\rreading versions         [##############################] 11/11 100%" in drawn
    assert "\rwriting files            [##############################] 11/11 100%" in drawn
    code, drawn = _with_terminal("registry", "export", "--url", source, "--out", str(tmp_path / "b"), "--quiet")
    assert (code, drawn) == (0, "")
