"""Version facts served on /v1/metadata/version."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path


@functools.cache
def commit_id() -> str:
    """The git commit of the running code when it runs from a checkout, else ``unknown``."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=2,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"
