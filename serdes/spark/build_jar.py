"""Build the JVM engine's jar: ``python -m serdes.spark.build_jar [--force]``.

Compiles ``serdes/spark/java/**/*.java`` with ``javac --release 17`` against the jars pyspark ships (Spark's
SQL API and the Avro 1.12 jar it bundles), and writes ``serdes/spark/schemakit-spark.jar`` (package data).
Does nothing when the jar is newer than every source. Exits 1 with an install hint when javac is missing.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "java"
JAR = HERE / "schemakit-spark.jar"
INSTALL_HINT = ("javac (a JDK 17+) is needed to build the Spark JVM engine: on Debian/Ubuntu "
                "`apt-get install openjdk-17-jdk-headless`")


def sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def up_to_date() -> bool:
    if not JAR.exists():
        return False
    built = JAR.stat().st_mtime
    return all(src.stat().st_mtime <= built for src in sources())


def pyspark_jars() -> Path:
    import pyspark  # here, not at the top: checking up_to_date() needs no pyspark (serdes.spark checked it is there)

    jars = Path(pyspark.__file__).parent / "jars"
    if not any(jars.glob("avro-1.*.jar")) or not any(jars.glob("spark-sql-api_*.jar")):
        raise SystemExit(f"{jars} does not hold pyspark's jars (spark-sql-api, avro): is pyspark a full install?")
    return jars


def build(force: bool = False) -> Path:
    """Compile and package the jar (unless up to date); returns its path."""
    if not force and up_to_date():
        return JAR
    javac = shutil.which("javac")
    if javac is None:
        raise SystemExit(INSTALL_HINT)
    classpath = str(pyspark_jars() / "*")
    with tempfile.TemporaryDirectory(prefix="schemakit-jar-") as tmp:
        out = Path(tmp) / "classes"
        cmd = [javac, "--release", "17", "-encoding", "UTF-8", "-Xlint:-options", "-cp", classpath,
               "-d", str(out), *map(str, sources())]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"javac failed:\n{done.stdout}{done.stderr}")
        partial = JAR.with_suffix(".jar.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: schemakit build_jar\r\n\r\n")
            for cls in sorted(out.rglob("*.class")):
                info = zipfile.ZipInfo(cls.relative_to(out).as_posix(), time.localtime(cls.stat().st_mtime)[:6])
                info.compress_type = zipfile.ZIP_DEFLATED
                jar.writestr(info, cls.read_bytes())
        partial.replace(JAR)
    return JAR


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    fresh = not up_to_date()
    path = build(force="--force" in argv)
    print(f"{'built' if fresh or '--force' in argv else 'up to date'}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
