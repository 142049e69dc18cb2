"""``streams.testing``: its ``Test*`` classes are tools, not test classes, so a test module that imports them
collects cleanly (pytest would otherwise try to collect them and warn)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from streams import TestRecord


def test_a_test_module_importing_the_driver_collects_without_warnings(tmp_path: Path) -> None:
    (tmp_path / "test_uses_driver.py").write_text(
        "from streams import TestInputTopic, TestOutputTopic, TestRecord, TopologyTestDriver\n"
        "\n"
        "def test_nothing() -> None:\n"
        "    pass\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error", "test_uses_driver.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed" in out.stdout and "warning" not in out.stdout.lower(), out.stdout


def test_test_record_keeps_its_four_fields() -> None:
    assert [f.name for f in dataclasses.fields(TestRecord)] == ["key", "value", "timestamp", "headers"]
    assert TestRecord("k", "v", 5) == TestRecord("k", "v", 5, ())
