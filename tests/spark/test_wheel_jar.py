"""The wheel build hook (setup.py): a wheel built with a JDK and Spark's jars at hand carries the JVM engine's jar,
compiled during the build; without javac the build says why and goes on (or fails when the jar is required)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("registry", "serdes", "compat", "streams", "schemakit")
JAR = "serdes/spark/schemakit-spark.jar"

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's sources without any jar (or build directory) from before."""
    src = tmp_path_factory.mktemp("wheel-src")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.jar"))
    return src


def build_wheel(src: Path, out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    # --no-build-isolation: the build sees this venv's pyspark, as `make wheel` does
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-v", "-w", str(out), str(src)]
    return subprocess.run(
        cmd, capture_output=True, text=True, check=False, timeout=500, cwd=out, env={**os.environ, **env}
    )


def test_the_wheel_carries_the_jar_compiled_by_the_build(sources: Path, tmp_path: Path) -> None:
    done = build_wheel(sources, tmp_path, SCHEMAKIT_SPARK_JAR="require")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "compiling the Spark JVM engine's jar against" in done.stdout + done.stderr
    (wheel,) = tmp_path.glob("schemakit-*.whl")
    with zipfile.ZipFile(wheel) as whl, whl.open(JAR) as nested, zipfile.ZipFile(nested) as jar:
        classes = set(jar.namelist())
    assert {
        "schemakit/spark/RegistryDecodeExpression.class",
        "schemakit/spark/AvroRegistryDecoder.class",
        "schemakit/spark/AvroCatalystReader.class",
    } <= classes


def test_without_javac_the_wheel_builds_without_the_jar_and_says_why(sources: Path, tmp_path: Path) -> None:
    no_jdk = {"PATH": str(Path(sys.executable).parent), "SPARK_HOME": ""}
    done = build_wheel(sources, tmp_path, **no_jdk)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "the Spark JVM engine's jar is not in this build: no javac (a JDK 17+)" in done.stdout + done.stderr
    (wheel,) = tmp_path.glob("schemakit-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        assert JAR not in whl.namelist() and "serdes/spark/build_jar.py" in whl.namelist()
    (tmp_path / "required").mkdir()
    required = build_wheel(sources, tmp_path / "required", SCHEMAKIT_SPARK_JAR="require", **no_jdk)
    assert required.returncode != 0
    assert "the Spark JVM engine's jar is not in this build: no javac" in required.stdout + required.stderr
