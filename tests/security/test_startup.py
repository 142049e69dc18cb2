"""Settings that cannot work stop the server at startup with one line naming the option."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "registry", "serve", "--log", f"sqlite:///{tmp_path / 'data'}", "--port", "1", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--auth", "basic"], "--auth basic needs --users-file (users with password hashes)"),
        (["--auth", "kerberos"], "--auth: unknown mechanism(s) kerberos (use basic, bearer, mtls)"),
        (["--auth", "bearer"], "--auth bearer needs --jwks-url or --jwt-key (the keys that sign the tokens)"),
        (
            ["--auth", "mtls"],
            "--auth mtls needs TLS with client certificates: --tls-cert, --tls-key and --tls-client-ca",
        ),
        (["--tls-key", "k.pem"], "--tls-key and --tls-client-ca need --tls-cert"),
        (
            ["--auth", "basic", "--users-file", "/nonexistent/users.json"],
            "--users-file /nonexistent/users.json: no such file",
        ),
    ],
)
def test_impossible_settings(tmp_path: Path, args: list[str], message: str) -> None:
    done = _serve(tmp_path, *args)
    assert done.returncode == 2
    assert message in done.stderr.splitlines()[-1]
    assert done.stderr.splitlines()[-1].startswith("schemakit: cannot start: ")


def test_a_users_file_that_does_not_load(tmp_path: Path) -> None:
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"permissions": [{"username": "u", "operation": "Read", "resource": "Subject:(?=x)"}]}))
    done = _serve(tmp_path, "--auth", "basic", "--users-file", str(users))
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].startswith(
        f"schemakit: cannot start: {users}: permissions[0]: resource: invalid or unsupported regular expression "
        "'Subject:(?=x)'"
    )
