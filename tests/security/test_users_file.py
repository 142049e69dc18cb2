"""The users file: hashes (argon2, bcrypt, Karapace's), roles, the checks when it is loaded, its reload on a running
server, and ``schemakit hash-password``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from registry.security.passwords import hash_password, parse_stored, verify
from registry.security.permissions import Authorizer, Operation
from registry.security.principal import Principal
from registry.security.users_file import UsersFileError, load, parse
from tests.support.credentials import UsersFile
from tests.support.registry_process import RegistryProcess
from tests.support.waiting import wait_for


@pytest.mark.parametrize("algorithm", ["argon2", "bcrypt", "sha1", "sha256", "sha512", "scrypt"])
def test_every_hash_verifies_its_password_only(algorithm: str) -> None:
    stored = hash_password("s3cret", algorithm)
    assert verify(stored, "s3cret")
    assert not verify(stored, "s3cret ")
    again = parse_stored(stored.password_hash, stored.algorithm if stored.salt else None, stored.salt or None)
    assert again == stored


def test_bad_entries_are_named() -> None:
    cases = [
        ({"users": [{"username": "a", "password_hash": "x"}]}, "users[0] (a): password_hash is neither an argon2"),
        (
            {"users": [{"username": "a", "password_hash": "x", "algorithm": "md5", "salt": "s"}]},
            "users[0] (a): unknown algorithm 'md5' (Karapace's: sha1, sha256, sha512, scrypt)",
        ),
        (
            {"users": [{"username": "a", "password_hash": "x", "algorithm": "sha1"}]},
            "users[0] (a): algorithm 'sha1' needs a 'salt'",
        ),
        (
            {"permissions": [{"username": "a", "operation": "Delete", "resource": ".*"}]},
            "permissions[0]: operation must be 'Read' or 'Write', got 'Delete'",
        ),
        (
            {"permissions": [{"operation": "Read", "resource": ".*"}]},
            "permissions[0]: give exactly one of 'username' and 'role'",
        ),
        # Python's re would take these; RE2 refuses what it cannot run in linear time
        (
            {"permissions": [{"username": "a", "operation": "Read", "resource": "Subject:(a)\\1"}]},
            "permissions[0]: resource: invalid or unsupported regular expression 'Subject:(a)\\\\1': invalid escape",
        ),
        (
            {"permissions": [{"username": "a", "operation": "Read", "resource": "Subject:(?!secret).*"}]},
            "permissions[0]: resource: invalid or unsupported regular expression",
        ),
        ({"users": [], "acl": []}, "unknown keys ['acl']"),
    ]
    for data, message in cases:
        with pytest.raises(UsersFileError) as e:
            parse(data, "f.json")
        assert str(e.value).startswith(f"f.json: {message}"), str(e.value)


def test_rules_follow_karapace() -> None:
    data = {
        "permissions": [
            {"username": "w", "operation": "Write", "resource": "Subject:orders"},
            {"username": "r", "operation": "Read", "resource": "Subject:orders$"},
            {"role": "auditors", "operation": "Read", "resource": ".*"},
        ]
    }
    rules = parse(data).permissions
    assert rules is not None
    authz = Authorizer(rules)
    w, r, a = Principal("w"), Principal("r"), Principal("x", frozenset({"auditors"}))
    # matched at the start of the resource, like Python's re.match in Karapace
    assert authz.allows(w, Operation.WRITE, "Subject:orders-value")
    assert authz.allows(w, Operation.READ, "Subject:orders")  # Write implies Read
    assert not authz.allows(w, Operation.WRITE, "Subject:xorders")
    assert authz.allows(r, Operation.READ, "Subject:orders")
    assert not authz.allows(r, Operation.READ, "Subject:orders-value")
    assert not authz.allows(r, Operation.WRITE, "Subject:orders")
    assert authz.allows(a, Operation.READ, "Config:") and not authz.allows(a, Operation.WRITE, "Config:")
    assert not authz.allows(Principal("auditors"), Operation.READ, "Config:")  # a role is not a user name
    assert Authorizer(None).allows(Principal("anyone"), Operation.WRITE, "Mode:")  # no permissions: all allowed


def test_a_long_hostile_resource_is_matched_in_linear_time() -> None:
    rules = parse({"permissions": [{"username": "u", "operation": "Read", "resource": "Subject:(a+)+$"}]}).permissions
    assert rules is not None
    # exponential for a backtracking engine; RE2 answers at once
    assert not Authorizer(rules).allows(Principal("u"), Operation.READ, "Subject:" + "a" * 50_000 + "!")


def test_load_reports_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(UsersFileError, match="cannot read the users file"):
        load(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{users: []}")
    with pytest.raises(UsersFileError, match=r"bad\.json: not valid JSON"):
        load(str(bad))


def test_hash_password_command_makes_entries_the_server_accepts() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "schemakit", "hash-password", "--user", "carol"],
        input="pa ss\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    entry = json.loads(out)
    assert set(entry) == {"username", "password_hash"} and entry["password_hash"].startswith("$argon2id$")
    users = parse({"users": [entry]}).users
    assert verify(users["carol"].password, "pa ss") and not verify(users["carol"].password, "pass")
    karapace = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "schemakit",
                "hash-password",
                "-a",
                "sha512",
                "-u",
                "user",
                "--salt",
                "iuLouaExTeg9ypqTxqP-dw",
            ],
            input="secret\n",
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    # the same entry as Karapace's README shows for `karapace_mkpasswd -u user -a sha512 secret`
    assert karapace == {
        "username": "user",
        "algorithm": "sha512",
        "salt": "iuLouaExTeg9ypqTxqP-dw",
        "password_hash": "R6ghYSXdLGsq6hkQcg8wT4xkD4QToxBhlp7NerTnyB077M+mD2qiN7ZxXCDb4aE+5lExu5P11UpMPYAcVYxSQA==",
    }


def test_users_file_is_reloaded_without_restart(
    start_registry: Callable[..., RegistryProcess], users_file: UsersFile
) -> None:
    users_file.user("admin", "admin-pw").user("bob", "bob-pw", roles=["team"]).allow("admin", "Write", ".*")
    rp = start_registry(
        None, "--auth", "basic", "--users-file", users_file.save(), probe={"auth": ("admin", "admin-pw")}
    )
    bob = httpx.Client(base_url=rp.url, auth=("bob", "bob-pw"), timeout=30)
    register = lambda c: c.post("/subjects/team-a/versions", json={"schema": '"string"'})  # noqa: E731
    assert register(bob).status_code == 403
    # a role rule added: bob's role may now write
    users_file.allow("team", "Write", "Subject:team-", role=True).save()
    wait_for(lambda: register(bob).status_code == 200, what="the new permission")
    # a new password: the old one (cached as verified) stops working, the new one works
    users_file.user("bob", "new-pw", roles=["team"]).save()
    wait_for(lambda: bob.get("/subjects").status_code == 401, what="the old password refused")
    assert httpx.get(rp.url + "/subjects", auth=("bob", "new-pw")).json() == ["team-a"]
    # a file that does not load leaves the last good one in force
    Path(users_file.path).write_text('{"users": [')
    wait_for(lambda: "cannot be loaded, keeping the previous one" in rp.log_file.read_text(), what="the warning")
    assert httpx.get(rp.url + "/subjects", auth=("bob", "new-pw")).status_code == 200
    # bob removed
    del users_file.users["bob"]
    users_file.save()
    wait_for(lambda: httpx.get(rp.url + "/subjects", auth=("bob", "new-pw")).status_code == 401, what="bob removed")
    assert httpx.get(rp.url + "/subjects", auth=("admin", "admin-pw")).json() == ["team-a"]
    bob.close()


def test_cached_reads_follow_the_users_file_at_once(
    start_registry: Callable[..., RegistryProcess], users_file: UsersFile
) -> None:
    """A cached read is admitted from the decision kept for the caller's credentials: once the users file that
    changes a password, a rule or removes the user is in force, the very next cached read is refused. (The
    reload is polled; another user's change in the same file says when it is in force.)"""
    users_file.user("admin", "admin-pw").allow("admin", "Write", ".*")
    users_file.user("bob", "bob-pw").allow("bob", "Read", "Subject:team-")
    rp = start_registry(
        None, "--auth", "basic", "--users-file", users_file.save(), probe={"auth": ("admin", "admin-pw")}
    )
    admin = httpx.Client(base_url=rp.url, auth=("admin", "admin-pw"), timeout=30)
    schema_id = admin.post("/subjects/team-a/versions", json={"schema": '"string"'}).json()["id"]
    paths = ["/subjects/team-a/versions/latest", f"/schemas/ids/{schema_id}"]
    lookup = ("/subjects/team-a", {"schema": '"string"'})

    def reads(auth: tuple[str, str]) -> list[int]:
        with httpx.Client(base_url=rp.url, auth=auth, timeout=30) as c:
            return [c.get(p).status_code for p in paths] + [c.post(lookup[0], json=lookup[1]).status_code]

    def in_force(name: str, password: str) -> None:
        wait_for(lambda: httpx.get(rp.url + "/subjects", auth=(name, password)).status_code == 200, what=name)

    for _ in range(3):  # missed once, then hits decided from the kept decision
        assert reads(("bob", "bob-pw")) == [200, 200, 200]
    # bob's rule taken away: denied (the app answers the 403)
    users_file.permissions.remove({"username": "bob", "operation": "Read", "resource": "Subject:team-"})
    users_file.user("marker-1", "m1").save()
    in_force("marker-1", "m1")
    assert reads(("bob", "bob-pw")) == [403, 403, 403]
    # the rule back, then a new password: the old one is refused at once
    users_file.allow("bob", "Read", "Subject:team-").user("marker-2", "m2").save()
    in_force("marker-2", "m2")
    assert reads(("bob", "bob-pw")) == [200, 200, 200]
    users_file.user("bob", "new-pw").user("marker-3", "m3").save()
    in_force("marker-3", "m3")
    assert reads(("bob", "bob-pw")) == [401, 401, 401]
    assert reads(("bob", "new-pw")) == [200, 200, 200]
    assert reads(("bob", "new-pw")) == [200, 200, 200]
    # bob removed
    del users_file.users["bob"]
    users_file.user("marker-4", "m4").save()
    in_force("marker-4", "m4")
    assert reads(("bob", "new-pw")) == [401, 401, 401]
    admin.close()
