"""``schemakit registry …`` against a live registry: every command, its output and its exit status."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli.test_compat_check import MISSING_DEFAULT, V1, V2, V3_BAD
from tests.support import REPO_ROOT
from tests.support.cli import Result, run_process
from tests.support.http_stub import StubServer

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


@pytest.fixture
def subject() -> str:
    return f"cli-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in {"v1.avsc": V1, "v2.avsc": V2, "v3.avsc": V3_BAD}.items():
        (tmp_path / name).write_text(text)
        out[name] = tmp_path / name
    return out


@pytest.fixture
def http(registry_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=registry_url, timeout=30, headers=CT) as c:
        yield c


def test_register_then_read_back(registry_url: str, subject: str, files: dict[str, Path], http: httpx.Client) -> None:
    first = run_process("registry", "--url", registry_url, "register", str(files["v1.avsc"]), "--subject", subject)
    assert first.code == 0, first.err
    v1_id = http.get(f"/subjects/{subject}/versions/1").json()["id"]
    assert first.out == f"registered {subject} version 1, id {v1_id}\n"
    second = run_process(
        "registry", "register", str(files["v2.avsc"]), "-s", subject, "--url", registry_url, "-o", "json"
    )
    assert second.code == 0, second.err
    v2_id = http.get(f"/subjects/{subject}/versions/2").json()["id"]
    assert second.json() == {"subject": subject, "version": 2, "id": v2_id}
    # the console script itself, with the URL from the environment
    script = Path(sys.executable).parent / "schemakit"
    import subprocess

    listed = subprocess.run(
        [str(script), "registry", "subjects", "--prefix", subject, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        env={"SCHEMAKIT_REGISTRY_URL": registry_url, "PATH": ""},
    )
    assert (listed.returncode, json.loads(listed.stdout)) == (0, [subject]), listed.stderr
    versions = run_process("registry", "--url", registry_url, "versions", subject)
    assert versions.code == 0
    width = max(2, len(str(v2_id)))
    assert versions.out.splitlines() == [
        f"VERSION  {'ID':<{width}}  TYPE  STATE",
        f"1        {v1_id:<{width}}  AVRO",
        f"2        {v2_id:<{width}}  AVRO",
    ]
    raw = run_process("registry", "--url", registry_url, "get", subject, "1", "--schema-only")
    assert (raw.code, raw.out) == (0, V1 + "\n")
    by_id = run_process("registry", "--url", registry_url, "get", "--id", str(v2_id), "-o", "json")
    assert by_id.json() == {"id": v2_id, "guid": by_id.json()["guid"], "schema": V2}
    shown = run_process("registry", "--url", registry_url, "get", subject)
    assert shown.out.splitlines()[:5] == [f"subject  {subject}", "version  2", f"id       {v2_id}", "type     AVRO", ""]
    assert shown.out.splitlines()[5:] == [
        "{",
        '  "type": "record",',
        '  "name": "Order",',
        '  "fields": [',
        '    {"name": "id", "type": "long"},',
        '    {"name": "note", "type": ["null", "string"], "default": null}',
        "  ]",
        "}",
    ]


def test_check_exit_status_is_for_ci(
    registry_url: str, subject: str, files: dict[str, Path], http: httpx.Client
) -> None:
    assert http.post(f"/subjects/{subject}/versions", json={"schema": V2}).status_code == 200
    ok = run_process("registry", "--url", registry_url, "check", str(files["v2.avsc"]), "--subject", subject)
    assert (ok.code, ok.out) == (0, f"compatible: {files['v2.avsc']} can be registered under {subject}\n")
    bad = run_process("registry", "--url", registry_url, "check", str(files["v3.avsc"]), "--subject", subject)
    assert bad.code == 1
    lines = bad.out.splitlines()
    assert lines[:3] == [
        f"incompatible: {files['v3.avsc']} cannot be registered under {subject}:",
        f"  {MISSING_DEFAULT}",
        "  {oldSchemaVersion: 1}",
    ]
    as_json = run_process(
        "registry", "--url", registry_url, "check", str(files["v3.avsc"]), "-s", subject, "-o", "json"
    )
    server = http.post(
        f"/compatibility/subjects/{subject}/versions", params={"verbose": "true"}, json={"schema": V3_BAD}
    ).json()
    assert (as_json.code, as_json.json()) == (1, server)
    fresh = run_process("registry", "--url", registry_url, "check", str(files["v3.avsc"]), "-s", f"{subject}-new")
    assert (fresh.code, fresh.out) == (0, f"compatible: {files['v3.avsc']} can be registered under {subject}-new\n")


def test_diff_shows_the_change_and_every_level(registry_url: str, subject: str, http: httpx.Client) -> None:
    assert http.put(f"/config/{subject}", json={"compatibility": "NONE"}).status_code == 200
    for text in (V1, V2, V3_BAD):
        assert http.post(f"/subjects/{subject}/versions", json={"schema": text}).status_code == 200
    shown = run_process("registry", "--url", registry_url, "diff", subject, "1", "2")
    assert shown.code == 0, shown.err
    out = shown.out.splitlines()
    assert out[:2] == [
        f"--- {subject} version 1 (id {_id(http, subject, 1)})",
        f"+++ {subject} version 2 (id {_id(http, subject, 2)})",
    ]
    assert out[2:9] == [
        "@@ -2,6 +2,7 @@",
        '   "type": "record",',
        '   "name": "Order",',
        '   "fields": [',
        '-    {"name": "id", "type": "long"}',
        '+    {"name": "id", "type": "long"},',
        '+    {"name": "note", "type": ["null", "string"], "default": null}',
    ]
    assert out[-8:] == ["LEVEL                COMPATIBLE  WHY NOT"] + [
        f"{lvl:<21}yes"
        for lvl in (
            "NONE",
            "BACKWARD",
            "BACKWARD_TRANSITIVE",
            "FORWARD",
            "FORWARD_TRANSITIVE",
            "FULL",
            "FULL_TRANSITIVE",
        )
    ]
    # 2 -> 3: the added field has no default. Each plain level answers what the registry answers at that level.
    data = run_process("registry", "--url", registry_url, "diff", subject, "2", "3", "-o", "json")
    assert data.code == 0, data.err
    levels = data.json()["levels"]
    assert {lvl: v["is_compatible"] for lvl, v in levels.items()} == {
        "NONE": True,
        "BACKWARD": False,
        "BACKWARD_TRANSITIVE": False,
        "FORWARD": True,
        "FORWARD_TRANSITIVE": True,
        "FULL": False,
        "FULL_TRANSITIVE": False,
    }
    for level in ("BACKWARD", "FORWARD", "FULL"):
        assert http.put(f"/config/{subject}", json={"compatibility": level}).status_code == 200
        server = http.post(
            f"/compatibility/subjects/{subject}/versions/2", params={"verbose": "true"}, json={"schema": V3_BAD}
        ).json()
        assert levels[level] == server


def test_diff_lists_confluents_change_kinds_for_json_schema(
    registry_url: str, subject: str, http: httpx.Client
) -> None:
    closed = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
    wider = {**closed, "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    for schema in (closed, wider):
        _ok = http.post(f"/subjects/{subject}/versions", json={"schema": json.dumps(schema), "schemaType": "JSON"})
        assert _ok.status_code == 200, _ok.text
    shown = run_process("registry", "--url", registry_url, "diff", subject, "1", "2")
    assert shown.code == 0, shown.err
    out = shown.out.splitlines()
    assert out[2:10] == [
        "@@ -1,7 +1,8 @@",
        " {",
        '   "type": "object",',
        '   "properties": {',
        '-    "a": {"type": "string"}',
        '+    "a": {"type": "string"},',
        '+    "b": {"type": "integer"}',
        "   },",
    ]
    assert "changes (Confluent's kinds): OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/b" in out
    assert "FORWARD              no          PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/b" in out
    assert "BACKWARD             yes" in out


def _id(http: httpx.Client, subject: str, version: int) -> int:
    return http.get(f"/subjects/{subject}/versions/{version}").json()["id"]


def test_config_and_mode(registry_url: str, subject: str, files: dict[str, Path]) -> None:
    url = ["--url", registry_url]
    assert run_process("registry", *url, "register", str(files["v1.avsc"]), "-s", subject).code == 0
    set_level = run_process("registry", *url, "config", subject, "--set", "full", "-o", "json")
    assert (set_level.code, set_level.json()) == (0, {"compatibility": "FULL"})
    shown = run_process("registry", *url, "config", subject)
    assert (shown.code, shown.out) == (0, "compatibilityLevel  FULL\n")
    assert run_process("registry", *url, "config", subject, "--delete").code == 0
    assert (
        run_process("registry", *url, "config", subject, "-o", "json").json()
        == httpx.get(f"{registry_url}/config").json()
    )
    readonly = run_process("registry", *url, "mode", subject, "--set", "READONLY")
    assert (readonly.code, readonly.out) == (0, "mode  READONLY\n")
    refused = run_process("registry", *url, "register", str(files["v2.avsc"]), "-s", subject)
    assert refused.code == 2
    assert refused.err == (
        f"schemakit registry register: Subject {subject} in context . is in read-only mode "
        "(HTTP 422, error code 42205)\n"
    )
    assert run_process("registry", *url, "mode", subject, "--delete").code == 0
    assert run_process("registry", *url, "mode", subject, "-o", "json").json() == {"mode": "READWRITE"}
    bad = run_process("registry", *url, "config", subject, "--set", "SIDEWAYS")
    assert bad.code == 2 and "invalid choice: 'SIDEWAYS'" in bad.err


def test_delete_soft_then_permanent(registry_url: str, subject: str, http: httpx.Client) -> None:
    for text in (V1, V2):
        assert http.post(f"/subjects/{subject}/versions", json={"schema": text}).status_code == 200
    url = ["--url", registry_url]
    one = run_process("registry", *url, "delete", subject, "1")
    assert (one.code, one.out) == (0, f"soft-deleted {subject} version 1\n")
    listed = run_process("registry", *url, "versions", subject, "--deleted", "-o", "json")
    assert [(v["version"], v["deleted"]) for v in listed.json()] == [(1, True), (2, False)]
    gone = run_process("registry", *url, "delete", subject, "--permanent")
    assert (gone.code, gone.out) == (0, f"permanently deleted {subject} versions 1, 2\n")
    assert http.get(f"/subjects/{subject}/versions", params={"deleted": "true"}).status_code == 404
    missing = run_process("registry", *url, "versions", subject)
    assert missing.code == 2
    assert missing.err == f"schemakit registry versions: Subject '{subject}' not found. (HTTP 404, error code 40401)\n"


def test_references_by_subject_and_version(registry_url: str, subject: str, tmp_path: Path, http: httpx.Client) -> None:
    (tmp_path / "address.proto").write_text(
        'syntax = "proto3";\npackage acme;\nmessage Address { string street = 1; }\n'
    )
    (tmp_path / "customer.proto").write_text(
        'syntax = "proto3";\npackage acme;\nimport "acme/address.proto";\n'
        "message Customer { acme.Address address = 1; }\n"
    )
    url = ["--url", registry_url]
    address = run_process("registry", *url, "register", str(tmp_path / "address.proto"), "-s", f"{subject}-address")
    assert address.code == 0

    def register_customer(reference: str) -> Result:
        customer = str(tmp_path / "customer.proto")
        return run_process("registry", *url, "register", customer, "-s", subject, "--reference", reference)

    made = register_customer(f"acme/address.proto={subject}-address:latest")
    assert made.code == 0, made.err
    body = http.get(f"/subjects/{subject}/versions/1").json()
    assert body["references"] == [{"name": "acme/address.proto", "subject": f"{subject}-address", "version": 1}]
    shown = run_process("registry", *url, "get", subject)
    assert f"reference  acme/address.proto -> {subject}-address version 1" in shown.out.splitlines()
    bad = register_customer("acme/address.proto")
    assert (bad.code, bad.err) == (
        2,
        "schemakit registry register: --reference takes NAME=SUBJECT:VERSION, got 'acme/address.proto'\n",
    )


def test_connection_problems_exit_two(files: dict[str, Path]) -> None:
    no_url = run_process("registry", "subjects", env={"SCHEMAKIT_REGISTRY_URL": ""})
    assert (no_url.code, no_url.err) == (2, "schemakit registry subjects: no registry URL: pass --url URL\n")
    from tests.support.ports import free_port

    down = run_process("registry", "--url", f"http://127.0.0.1:{free_port()}", "--timeout", "2", "subjects")
    assert down.code == 2
    assert "GET /subjects failed on every registry URL" in down.err
    bad_user = run_process("registry", "--url", "http://127.0.0.1:1", "--user", "alice", "subjects")
    assert (bad_user.code, bad_user.err) == (2, "schemakit registry subjects: --user takes USER:PASSWORD\n")


def test_credentials_go_in_the_authorization_header(cli: Callable[..., Result]) -> None:
    # a registry stand-in that answers an empty subject list
    with StubServer("application/vnd.schemaregistry.v1+json", lambda: b"[]") as registry:
        assert cli("registry", "--url", registry.url, "--token", "s3cret", "subjects").code == 0
        assert cli("registry", "subjects", "--url", registry.url, "--user", "alice:pw").code == 0
        both = cli("registry", "subjects", "--url", registry.url, "--user", "alice:pw", "--token", "t")
        assert (both.code, both.err) == (
            2,
            "schemakit registry subjects: --user and --token are alternatives: pass one\n",
        )
    assert [h.get("Authorization") for h in registry.headers] == ["Bearer s3cret", "Basic YWxpY2U6cHc="]
