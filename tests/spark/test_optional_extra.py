"""serdes.spark without the spark extra fails with one ImportError naming the extra; the rest of serdes never
imports pyspark, pyarrow, pandas or serdes.spark. Runs in subprocesses, so it needs no Spark itself."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("missing", ["pyspark", "pyarrow", "pandas"])
def test_without_the_extra_every_entry_point_names_it(missing: str) -> None:
    out = _python(f"""
        import sys
        sys.modules[{missing!r}] = None  # how Python marks a module that cannot be imported
        for statement in ("import serdes.spark", "from serdes.spark import from_registry",
                          "import serdes.spark.functions", "import serdes.spark.build_jar"):
            try:
                exec(statement)
            except ImportError as e:
                print(type(e).__name__ + ": " + str(e))
            else:
                print("imported: " + statement)
    """)
    want = f"ImportError: serdes.spark needs {missing} (not installed): pip install 'schemakit[spark]'"
    assert out.splitlines() == [want] * 4


def test_serdes_never_imports_spark_or_its_dependencies() -> None:
    out = _python("""
        import importlib, pkgutil, sys
        import serdes
        for module in pkgutil.iter_modules(serdes.__path__):
            if module.name != "spark":
                importlib.import_module("serdes." + module.name)
        print(sorted(n for n in sys.modules
                     if n.partition(".")[0] in ("pyspark", "pyarrow", "pandas") or n.startswith("serdes.spark")))
    """)
    assert out == "[]"
