"""Basic authentication with Karapace's auth file as it is, and each permission rule, against a real server,
with confluent-kafka's client (``basic.auth.user.info``) as the peer."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from tests.support.registry_process import RegistryProcess
from tests.support.waiting import poll_until

# Karapace's auth file format (README "Authentication and authorization of Karapace Schema Registry REST API"), with
# hashes made by Karapace itself: admin/admin, aladdin/opensesame and reader/secret are the users of Karapace's own
# integration tests (tests/integration/config/karapace.auth.json), user/secret is its README's karapace_mkpasswd
# example. Karapace's algorithms scrypt, sha512 and sha1 are all here.
KARAPACE_AUTH_FILE = {
    "users": [
        {
            "username": "admin",
            "algorithm": "scrypt",
            "salt": "adminsalt",
            "password_hash": "AG7+ttm/skHjqEZ90yzEkgjy75yaqoucNnQPIP2S++1rYOPXEtm4+AF7WdDGj+J0sIPFdYC9nXYsvkB1xYDYkw==",
        },
        {
            "username": "aladdin",
            "algorithm": "sha512",
            "salt": "salt",
            "password_hash": "uofa7Uw+IolY0GDeCQApTVAUPlBthFYPFQ+QN+kKtXBzSwddiyLrNnIC2UQcA5X+hCL/mHNNqEMA30oIM4oqxA==",
        },
        {
            "username": "reader",
            "algorithm": "sha1",
            "salt": "third-salt",
            "password_hash": "SeUTCvKCE8rj6lHFkyFkhopktuY=",
        },
        {
            "username": "user",
            "algorithm": "sha512",
            "salt": "iuLouaExTeg9ypqTxqP-dw",
            "password_hash": "R6ghYSXdLGsq6hkQcg8wT4xkD4QToxBhlp7NerTnyB077M+mD2qiN7ZxXCDb4aE+5lExu5P11UpMPYAcVYxSQA==",
        },
    ],
    "permissions": [
        {"username": "admin", "operation": "Write", "resource": ".*"},
        {"username": "aladdin", "operation": "Write", "resource": "Subject:cave-.*"},
        {"username": "reader", "operation": "Read", "resource": "Subject:carpet-.*"},
        {"username": "user", "operation": "Read", "resource": "Subject:general.*"},
        {"username": "user", "operation": "Read", "resource": "Config:"},
    ],
}
ADMIN = ("admin", "admin")
ALADDIN = ("aladdin", "opensesame")
READER = ("reader", "secret")
USER = ("user", "secret")
CHALLENGE = 'Basic realm="schemakit", charset="UTF-8"'
AVRO = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}, separators=(",", ":"))


@pytest.fixture(scope="module")
def karapace_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryProcess]:
    from tests.support.ports import free_port

    d = tmp_path_factory.mktemp("karapace-auth")
    auth_file = d / "karapace.auth.json"
    auth_file.write_text(json.dumps(KARAPACE_AUTH_FILE, indent=4))
    rp = RegistryProcess(
        f"sqlite:///{d / 'data'}",
        free_port(),
        d / "server.log",
        ["--auth", "basic", "--users-file", str(auth_file)],
        probe={"auth": ADMIN},
    ).start()
    yield rp
    rp.stop()


@pytest.fixture
def as_user(karapace_registry: RegistryProcess) -> Iterator[Callable[[tuple[str, str] | None], httpx.Client]]:
    clients: list[httpx.Client] = []

    def make(auth: tuple[str, str] | None) -> httpx.Client:
        c = httpx.Client(base_url=karapace_registry.url, auth=auth, timeout=30)
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.close()


def _name(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def _denied(resp: httpx.Response, operation: str, resource: str) -> None:
    assert resp.status_code == 403, resp.text
    assert resp.json() == {"error_code": 40301, "message": f"User is denied operation {operation} on {resource}"}


def test_unauthenticated_is_401_with_a_challenge(as_user: Callable[..., httpx.Client]) -> None:
    r = as_user(None).get("/subjects")
    assert r.status_code == 401
    assert r.json() == {"error_code": 401, "message": "Unauthorized: authentication required: basic credentials"}
    assert r.headers.get_list("www-authenticate") == [CHALLENGE]
    wrong = as_user(("aladdin", "open sesame")).get("/subjects")
    assert wrong.status_code == 401
    assert wrong.json() == {"error_code": 401, "message": "Unauthorized: invalid username or password"}
    assert as_user(("nobody", "x")).get("/config").status_code == 401
    bearer = as_user(None).get("/subjects", headers={"Authorization": "Bearer abc"})
    assert bearer.status_code == 401
    assert (
        bearer.json()["message"] == "Unauthorized: unsupported authorization scheme 'bearer'; authentication "
        "required: basic credentials"
    )


def test_confluent_client_with_basic_auth_user_info(karapace_registry: RegistryProcess) -> None:
    cave, other = _name("cave-"), _name("other-")
    aladdin = SchemaRegistryClient({"url": karapace_registry.url, "basic.auth.user.info": "aladdin:opensesame"})
    schema_id = aladdin.register_schema(cave, Schema(AVRO, "AVRO"))
    assert aladdin.get_latest_version(cave).schema_id == schema_id
    assert aladdin.get_schema(schema_id).schema_str == AVRO
    with pytest.raises(SchemaRegistryError) as e:
        aladdin.register_schema(other, Schema(AVRO, "AVRO"))
    assert (e.value.http_status_code, e.value.error_code) == (403, 40301)
    assert e.value.error_message == f"User is denied operation Write on Subject: {other}"
    nobody = SchemaRegistryClient({"url": karapace_registry.url, "basic.auth.user.info": "aladdin:wrong"})
    with pytest.raises(SchemaRegistryError) as e:
        nobody.get_subjects()
    assert (e.value.http_status_code, e.value.error_code) == (401, 401)


def test_subject_rules_read_and_write(as_user: Callable[..., httpx.Client]) -> None:
    cave, carpet = _name("cave-"), _name("carpet-")
    admin, aladdin, reader = as_user(ADMIN), as_user(ALADDIN), as_user(READER)
    body = {"schema": AVRO}
    # Write implies Read (aladdin: Write on Subject:cave-.*)
    assert aladdin.post(f"/subjects/{cave}/versions", json=body).status_code == 200
    for path in (
        f"/subjects/{cave}/versions",
        f"/subjects/{cave}/versions/1",
        f"/subjects/{cave}/versions/1/schema",
        f"/subjects/{cave}/versions/1/referencedby",
        f"/config/{cave}?defaultToGlobal=true",
        f"/mode/{cave}?defaultToGlobal=true",
    ):
        assert aladdin.get(path).status_code == 200, path
    assert aladdin.post(f"/subjects/{cave}", json=body).status_code == 200  # lookup
    assert aladdin.post(f"/compatibility/subjects/{cave}/versions/latest", json=body).json() == {"is_compatible": True}
    assert aladdin.put(f"/config/{cave}", json={"compatibility": "FULL"}).status_code == 200
    # a subject no rule of aladdin's covers: reads and writes denied
    assert admin.post(f"/subjects/{carpet}/versions", json=body).status_code == 200
    _denied(aladdin.get(f"/subjects/{carpet}/versions"), "Read", f"Subject: {carpet}")
    _denied(aladdin.post(f"/subjects/{carpet}", json=body), "Read", f"Subject: {carpet}")
    _denied(aladdin.post(f"/compatibility/subjects/{carpet}/versions", json=body), "Read", f"Subject: {carpet}")
    _denied(aladdin.delete(f"/subjects/{carpet}"), "Write", f"Subject: {carpet}")
    _denied(aladdin.put(f"/mode/{carpet}", json={"mode": "READONLY"}), "Write", f"Subject: {carpet}")
    # Read does not imply Write (reader: Read on Subject:carpet-.*)
    assert reader.get(f"/subjects/{carpet}/versions/latest").json()["subject"] == carpet
    _denied(reader.post(f"/subjects/{carpet}/versions", json={"schema": '"string"'}), "Write", f"Subject: {carpet}")
    _denied(reader.delete(f"/subjects/{carpet}/versions/1"), "Write", f"Subject: {carpet}")
    _denied(reader.delete(f"/config/{carpet}"), "Write", f"Subject: {carpet}")
    _denied(reader.get(f"/subjects/{cave}/versions/latest"), "Read", f"Subject: {cave}")
    # a subject deleted by its writer
    assert aladdin.delete(f"/subjects/{cave}").json() == [1]


def test_global_config_mode_and_import(as_user: Callable[..., httpx.Client]) -> None:
    user, aladdin, admin = as_user(USER), as_user(ALADDIN), as_user(ADMIN)
    # Read on Config: reads the global config and mode (as in Karapace); nothing global is writable by it
    assert user.get("/config").json() == {"compatibilityLevel": "BACKWARD"}
    assert user.get("/mode").json() == {"mode": "READWRITE"}
    _denied(user.put("/config", json={"compatibility": "NONE"}), "Write", "Config")
    _denied(user.delete("/config"), "Write", "Config")
    _denied(user.put("/mode", json={"mode": "READONLY"}), "Write", "Mode")
    _denied(aladdin.get("/config"), "Read", "Config")
    _denied(aladdin.get("/mode"), "Read", "Config")
    # choosing ids needs Write on Import:, besides the subject
    sub = _name("cave-imp-")
    assert aladdin.put(f"/mode/{sub}?force=true", json={"mode": "IMPORT"}).json() == {"mode": "IMPORT"}
    body = {"schema": '"string"', "id": 900001, "version": 1}
    _denied(aladdin.post(f"/subjects/{sub}/versions", json=body), "Write", "Import")
    assert admin.post(f"/subjects/{sub}/versions", json=body).json()["id"] == 900001
    assert admin.get("/config").status_code == 200


def test_listings_show_only_what_the_caller_may_read(as_user: Callable[..., httpx.Client]) -> None:
    admin, aladdin, reader, user = as_user(ADMIN), as_user(ALADDIN), as_user(READER), as_user(USER)
    cave, carpet = _name("cave-"), _name("carpet-")
    avro = AVRO.replace('"R"', f'"R{uuid.uuid4().hex}"')  # a schema (an id) of this test's own
    cave_id = admin.post(f"/subjects/{cave}/versions", json={"schema": avro}).json()["id"]
    carpet_registered = admin.post(f"/subjects/{carpet}/versions", json={"schema": '"long"'}).json()
    carpet_id, carpet_guid = carpet_registered["id"], carpet_registered["guid"]
    for _ in range(2):  # the second round is served from the read cache: still each caller's own listing
        subjects = {
            name: set(c.get("/subjects").json())
            for name, c in (("admin", admin), ("aladdin", aladdin), ("reader", reader), ("user", user))
        }
        assert {cave, carpet} <= subjects["admin"]
        assert cave in subjects["aladdin"] and all(s.startswith("cave-") for s in subjects["aladdin"])
        assert carpet in subjects["reader"] and all(s.startswith("carpet-") for s in subjects["reader"])
        assert subjects["user"] == set()
        assert {v["subject"] for v in reader.get("/schemas").json()} == subjects["reader"]
        assert {v["subject"] for v in aladdin.get("/schemas?latestOnly=true").json()} == subjects["aladdin"]
        assert user.get("/schemas").json() == []
    # schema ids: readable where the caller may read one of the id's subjects
    shared = _name("carpet-")
    assert admin.post(f"/subjects/{shared}/versions", json={"schema": avro}).json()["id"] == cave_id
    for _ in range(2):
        by_id = reader.get(f"/schemas/ids/{cave_id}").json()
        assert by_id == {"guid": by_id["guid"], "schema": avro}
        assert reader.get(f"/schemas/guids/{by_id['guid']}").json() == by_id  # by GUID: the same rule
        assert reader.get(f"/schemas/ids/{cave_id}/subjects").json() == [shared]
        assert reader.get(f"/schemas/ids/{cave_id}/versions").json() == [{"subject": shared, "version": 1}]
        assert sorted(admin.get(f"/schemas/ids/{cave_id}/subjects").json()) == sorted([cave, shared])
        assert aladdin.get(f"/schemas/ids/{cave_id}/subjects").json() == [cave]
        _denied(aladdin.get(f"/schemas/ids/{carpet_id}"), "Read", f"Schema: {carpet_id}")
        _denied(aladdin.get(f"/schemas/ids/{carpet_id}/schema"), "Read", f"Schema: {carpet_id}")
        _denied(user.get(f"/schemas/ids/{carpet_id}/versions"), "Read", f"Schema: {carpet_id}")
        _denied(aladdin.get(f"/schemas/guids/{carpet_guid}"), "Read", f"Schema: {carpet_guid}")
        _denied(aladdin.get(f"/schemas/guids/{carpet_guid}/ids"), "Read", f"Schema: {carpet_guid}")
    assert reader.get("/schemas/ids/99999999").json()["error_code"] == 40403  # no such id: as without auth


def test_cached_reads_are_still_authorized(as_user: Callable[..., httpx.Client]) -> None:
    admin, aladdin, reader = as_user(ADMIN), as_user(ALADDIN), as_user(READER)
    cave = _name("cave-")
    avro = AVRO.replace('"R"', f'"R{uuid.uuid4().hex}"')
    schema_id = aladdin.post(f"/subjects/{cave}/versions", json={"schema": avro}).json()["id"]
    paths = [f"/subjects/{cave}/versions/latest", f"/schemas/ids/{schema_id}", f"/subjects/{cave}/versions"]
    for path in paths:
        first, again = aladdin.get(path), aladdin.get(path)  # the second answer comes from the cache
        assert first.status_code == again.status_code == 200 and first.content == again.content
        assert admin.get(path).content == first.content
        denied = reader.get(path)
        assert denied.status_code == 403 and denied.json()["error_code"] == 40301, path
        assert as_user(None).get(path).status_code == 401
        assert as_user(("aladdin", "bad")).get(path).status_code == 401
    lookup = {"schema": avro}
    assert aladdin.post(f"/subjects/{cave}", json=lookup).json()["id"] == schema_id
    assert aladdin.post(f"/subjects/{cave}", json=lookup).json()["id"] == schema_id
    _denied(reader.post(f"/subjects/{cave}", json=lookup), "Read", f"Subject: {cave}")


def test_audit_lines_for_writes_and_denials(
    karapace_registry: RegistryProcess, as_user: Callable[..., httpx.Client]
) -> None:
    cave, carpet = _name("cave-"), _name("carpet-")
    as_user(ALADDIN).post(f"/subjects/{cave}/versions", json={"schema": '"string"'})
    as_user(ALADDIN).post(f"/subjects/{carpet}/versions", json={"schema": '"string"'})
    as_user(READER).get(f"/subjects/{cave}/versions")
    log = Path(karapace_registry.log_file).read_text()
    assert (
        f"registry.audit: audit outcome=allowed principal=aladdin mechanism=basic operation=Write "
        f'resource=Subject:{cave} request="POST /subjects/{cave}/versions" client=127.0.0.1'
    ) in log
    assert (
        f"registry.audit: audit outcome=denied principal=aladdin mechanism=basic operation=Write "
        f'resource=Subject:{carpet} request="POST /subjects/{carpet}/versions" client=127.0.0.1'
    ) in log
    assert (
        f"registry.audit: audit outcome=denied principal=reader mechanism=basic operation=Read "
        f'resource=Subject:{cave} request="GET /subjects/{cave}/versions" client=127.0.0.1'
    ) in log


def test_the_command_line_works_on_the_same_checks(
    karapace_registry: RegistryProcess, as_user: Callable[..., httpx.Client], capsys: pytest.CaptureFixture[str]
) -> None:
    from schemakit.cli import main

    cave, carpet = _name("cave-"), _name("carpet-")
    as_user(ADMIN).post(f"/subjects/{carpet}/versions", json={"schema": '"long"'})

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(["registry", "--url", karapace_registry.url, *args])
        out, err = capsys.readouterr()
        return code, out, err

    assert run("--user", "aladdin:opensesame", "config", cave, "--set", "FULL")[0] == 0
    assert as_user(ALADDIN).get(f"/config/{cave}").json() == {"compatibilityLevel": "FULL"}
    code, out, _ = run("--user", "aladdin:opensesame", "subjects", "-o", "json")
    assert code == 0 and carpet not in json.loads(out)  # the listing is the caller's own
    assert run("--user", "aladdin:opensesame", "versions", carpet) == (
        2,
        "",
        f"schemakit registry versions: User is denied operation Read on Subject: {carpet} "
        "(HTTP 403, error code 40301)\n",
    )
    assert run("--user", "reader:secret", "mode", "--set", "READONLY") == (
        2,
        "",
        "schemakit registry mode: User is denied operation Write on Mode (HTTP 403, error code 40301)\n",
    )
    code, _, err = run("--user", "reader:wrong", "subjects")
    assert code == 2 and err.startswith("schemakit registry subjects: Unauthorized: ") and "error code 401)" in err


def test_contexts_are_matched_by_qualified_name(as_user: Callable[..., httpx.Client]) -> None:
    admin, aladdin, reader = as_user(ADMIN), as_user(ALADDIN), as_user(READER)
    ctx = f".t{uuid.uuid4().hex[:8]}"
    carpet = _name("carpet-")
    body = {"schema": '"string"'}
    assert admin.post(f"/subjects/{carpet}/versions", json=body).status_code == 200
    # `:.:carpet-…` is `carpet-…`: the same permission, whatever the spelling
    assert reader.get(f"/subjects/:.:{carpet}/versions").json() == [1]
    _denied(aladdin.get(f"/subjects/:.:{carpet}/versions"), "Read", f"Subject: {carpet}")
    # aladdin's `Subject:cave-.*` does not reach `cave-…` in another context
    cave = f":{ctx}:{_name('cave-')}"
    _denied(aladdin.post(f"/subjects/{cave}/versions", json=body), "Write", f"Subject: {cave}")
    assert admin.post(f"/subjects/{cave}/versions", json=body).status_code == 200
    assert cave not in aladdin.get("/subjects").json() and cave in admin.get("/subjects").json()
    # an id read in that context (`?subject=` selects it) needs Read on one of the context's subjects holding it
    schema_id = admin.post(f"/subjects/{cave}", json=body).json()["id"]
    in_ctx = admin.get(f"/schemas/ids/{schema_id}?subject=:{ctx}:").json()
    assert in_ctx == {"guid": in_ctx["guid"], "schema": '"string"'}
    _denied(aladdin.get(f"/schemas/ids/{schema_id}?subject=:{ctx}:"), "Read", f"Schema: {schema_id}")
    assert admin.get(f"/schemas/ids/{schema_id}/subjects?subject={cave}").json() == [cave]
    # deleting a context is a write on its prefix
    assert admin.delete(f"/subjects/{cave}").status_code == 200
    assert admin.delete(f"/subjects/{cave}?permanent=true").status_code == 200
    _denied(aladdin.delete(f"/contexts/{ctx}"), "Write", f"Subject: :{ctx}:")
    assert admin.delete(f"/contexts/{ctx}").status_code == 204


def test_exporters_need_write_on_exporter_and_reach_a_secured_destination(
    as_user: Callable[..., httpx.Client], karapace_registry: RegistryProcess, start_registry: Callable[..., Any]
) -> None:
    user, aladdin, admin = as_user(USER), as_user(ALADDIN), as_user(ADMIN)
    # every /exporters route needs Write on Exporter: (reads too: the config holds credentials)
    _denied(user.get("/exporters"), "Write", "Exporter")
    create = {"name": "e", "config": {"schema.registry.url": "http://x"}}
    _denied(aladdin.post("/exporters", json=create), "Write", "Exporter")
    assert admin.get("/exporters").json() == []

    # an exporter into this secured registry, with basic.auth.user.info, from an open one
    source = start_registry()
    with httpx.Client(base_url=source.url, timeout=30) as http:
        http.post("/subjects/cave-linked/versions", json={"schema": AVRO}).raise_for_status()
        config = {"schema.registry.url": karapace_registry.url, "basic.auth.user.info": "aladdin:wrong"}
        body = {"name": "secured", "contextType": "CUSTOM", "context": "linked", "config": config}
        assert http.post("/exporters", json=body).status_code == 200

        def status() -> dict[str, Any]:
            found: dict[str, Any] = http.get("/exporters/secured/status").json()
            return found

        failing = poll_until(status, lambda s: s["state"] == "ERROR", timeout=30, what="the 401 to show")
        assert "401" in failing["trace"]
        assert http.put("/exporters/secured/pause").status_code == 200
        good = {"basic.auth.user.info": "admin:admin"}
        assert http.put("/exporters/secured/config", json=good).status_code == 200
        assert http.put("/exporters/secured/resume").status_code == 200
        poll_until(status, lambda s: s["state"] == "RUNNING" and s["lagRecords"] == 0, timeout=30)
    assert admin.get("/subjects/:.linked:cave-linked/versions/1").json()["schema"] == AVRO
