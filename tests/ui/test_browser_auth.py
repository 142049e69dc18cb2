"""The schema browser with authentication on: a reader sees only what it may read and no write controls; a
writer sees them. Basic authentication with a Karapace-format users file (sha512 hashes: no extra needed).

Skips where the registry has no security layer (``registry.security``).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.ports import free_port
from tests.support.registry_process import RegistryProcess
from tests.ui.test_browser import css, listed, text, wait

pytest.importorskip("registry.security", reason="this registry has no authentication (registry.security)")
pytestmark = pytest.mark.timeout(180)

USERS = {"writer": "w-secret", "reader": "r-secret"}
WRITER = ("writer", USERS["writer"])


def users_file() -> dict[str, Any]:
    def sha512(salt: str, password: str) -> str:  # Karapace's hash: PBKDF2-HMAC-SHA512, 5,000 rounds, base64
        return base64.b64encode(hashlib.pbkdf2_hmac("sha512", password.encode(), salt.encode(), 5000)).decode()

    return {
        "users": [
            {"username": u, "algorithm": "sha512", "salt": f"salt-{u}", "password_hash": sha512(f"salt-{u}", p)}
            for u, p in USERS.items()
        ],
        "permissions": [
            {"username": "writer", "operation": "Write", "resource": ".*"},
            {"username": "reader", "operation": "Read", "resource": "Subject:public-.*"},
            {"username": "reader", "operation": "Read", "resource": "Config:"},
        ],
    }


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryProcess]:
    d = tmp_path_factory.mktemp("ui-auth")
    (d / "users.json").write_text(json.dumps(users_file()))
    rp = RegistryProcess(
        f"sqlite:///{d / 'data'}",
        free_port(),
        d / "server.log",
        ["--auth", "basic", "--users-file", str(d / "users.json")],
        probe={"auth": WRITER},
    )
    rp.start()
    yield rp
    rp.stop()


def test_a_reader_sees_what_it_may_read_and_no_write_controls(browser: Any, secured: RegistryProcess) -> None:
    schema = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
    for subject in ("public-orders", "secret-salaries"):
        resp = httpx.post(f"{secured.url}/subjects/{subject}/versions", json={"schema": schema}, auth=WRITER)
        assert resp.status_code == 200, resp.text
    assert httpx.get(f"{secured.url}/ui/api/subjects").status_code == 401
    host = secured.url.removeprefix("http://")

    browser.get(f"http://reader:{USERS['reader']}@{host}/ui/#/s/public-orders")
    wait(browser, lambda b: text(b, "#who") == "signed in as reader · read-only")
    wait(browser, lambda b: text(b, "#version-title").startswith("Version 1 "))
    assert [w.text for w in css(browser, ".write") if w.is_displayed()] == []
    browser.get(f"http://reader:{USERS['reader']}@{host}/ui/")
    wait(browser, lambda b: listed(b) == ["public-orders"])

    browser.get(f"http://writer:{USERS['writer']}@{host}/ui/#/s/public-orders")
    wait(browser, lambda b: text(b, "#who") == "signed in as writer")
    wait(browser, lambda b: text(b, "#version-title").startswith("Version 1 "))
    shown = [w.text for w in css(browser, ".write") if w.is_displayed()]
    assert shown == ["New subject", "Test a new version", "Save compatibility", "Save mode"]
