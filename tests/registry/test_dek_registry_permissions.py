"""Permissions on the DEK registry's resources, ``Kek:<name>``, with basic authentication against a live server:
``Read`` reads a KEK and its DEKs, ``Write`` creates, changes and deletes them, a listing shows only the KEKs
the caller may read, denials are 403 (40301), and writes and denials are audited."""

from __future__ import annotations

import base64
from collections.abc import Callable

import httpx

from tests.support.credentials import UsersFile
from tests.support.registry_process import RegistryProcess

KEKS = "/dek-registry/v1/keks"
MATERIAL = base64.b64encode(b"wrapped").decode()
ADMIN = ("admin", "admin-pw")
TEAM = ("team", "team-pw")
AUDITOR = ("auditor", "auditor-pw")


def _denied(resp: httpx.Response, operation: str, resource: str) -> None:
    assert resp.status_code == 403, resp.text
    assert resp.json() == {"error_code": 40301, "message": f"User is denied operation {operation} on {resource}"}


def test_kek_permissions(start_registry: Callable[..., RegistryProcess], users_file: UsersFile) -> None:
    users_file.user(*ADMIN).user(*TEAM).user(*AUDITOR)
    users_file.allow("admin", "Write", ".*").allow("team", "Write", "Kek:team_").allow("auditor", "Read", "Kek:")
    rp = start_registry(None, "--auth", "basic", "--users-file", users_file.save(), probe={"auth": ADMIN})
    kek = {"kmsType": "local-kms", "kmsKeyId": "k"}
    with (
        httpx.Client(base_url=rp.url, auth=ADMIN, timeout=30) as admin,
        httpx.Client(base_url=rp.url, auth=TEAM, timeout=30) as team,
        httpx.Client(base_url=rp.url, auth=AUDITOR, timeout=30) as auditor,
        httpx.Client(base_url=rp.url, timeout=30) as stranger,
    ):
        assert stranger.get(KEKS).status_code == 401
        assert admin.post(KEKS, json={"name": "ops_main", **kek}).status_code == 200
        # team writes its own KEKs and their DEKs
        assert team.post(KEKS, json={"name": "team_a", **kek}).status_code == 200
        assert team.post(f"{KEKS}/team_a/deks/orders", json={"encryptedKeyMaterial": MATERIAL}).status_code == 200
        assert team.put(f"{KEKS}/team_a", json={"doc": "ours"}).status_code == 200
        assert team.get(f"{KEKS}/team_a/deks/orders/versions/1").status_code == 200
        # and nobody else's
        _denied(team.post(KEKS, json={"name": "ops_other", **kek}), "Write", "Kek: ops_other")
        _denied(team.get(f"{KEKS}/ops_main"), "Read", "Kek: ops_main")
        _denied(team.post(f"{KEKS}/ops_main/deks/orders", json={"encryptedKeyMaterial": MATERIAL}), "Write",
                "Kek: ops_main")  # fmt: skip
        _denied(team.delete(f"{KEKS}/ops_main"), "Write", "Kek: ops_main")
        assert team.get(KEKS).json() == ["team_a"]
        # the auditor reads everything and changes nothing
        assert auditor.get(KEKS).json() == ["ops_main", "team_a"]
        assert auditor.get(f"{KEKS}/team_a/deks/orders").status_code == 200
        assert auditor.get(f"{KEKS}/team_a/deks").json() == ["orders"]
        _denied(auditor.delete(f"{KEKS}/team_a/deks/orders"), "Write", "Kek: team_a")
        _denied(auditor.post(f"{KEKS}/team_a/undelete"), "Write", "Kek: team_a")
        _denied(auditor.put(f"{KEKS}/team_a", json={"doc": "x"}), "Write", "Kek: team_a")
        # a KEK's permission does not reach the schemas
        _denied(team.get("/subjects/orders/versions"), "Read", "Subject: orders")
    log = rp.log_file.read_text()
    assert "outcome=allowed principal=team mechanism=basic operation=Write resource=Kek:team_a" in log
    assert "outcome=denied principal=auditor mechanism=basic operation=Write resource=Kek:team_a" in log
