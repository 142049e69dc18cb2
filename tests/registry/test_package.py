"""The ``registry`` root loads its modules on first use (its ``__all__`` is pinned in tests/test_public_api.py)."""

from __future__ import annotations

import subprocess
import sys


def test_small_modules_do_not_load_the_server() -> None:
    code = "import sys, registry.errors, registry.schemas_topic; print('uvicorn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
