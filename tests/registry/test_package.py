"""The ``registry`` and ``compat`` package roots: every name in ``__all__`` is there, loaded on first use."""

from __future__ import annotations

import subprocess
import sys

import compat
import registry


def test_every_public_name_resolves() -> None:
    for package in (registry, compat):
        for name in package.__all__:
            assert getattr(package, name) is not None, f"{package.__name__}.{name}"


def test_small_modules_do_not_load_the_server() -> None:
    code = "import sys, registry.errors, registry.schemas_topic; print('uvicorn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
