"""What a user gets from ``pip install schemakit`` with no extras: a registry that starts and serves.

The bare install goes into a fresh venv (no system site-packages), from a copy of the sources, so neither
this checkout's ``.venv`` nor its build artefacts can stand in for a missing dependency.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support import REPO_ROOT
from tests.support.ports import free_port
from tests.support.waiting import poll_until

# Resolving and installing the dependencies into a fresh venv takes minutes on a busy 2-core machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

PACKAGES = ("registry", "serdes", "compat", "streams", "schemakit")


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)  # type: ignore[call-overload]


def run_python(venv: Path, code: str) -> str:
    """What ``code`` printed, run by the venv's Python in ``/`` (so the checkout is not importable), once it
    exited 0."""
    out = _run([str(venv / "bin" / "python"), "-c", code], cwd="/")
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding ``pip install <sources>`` and nothing else (not even pip)."""
    work = tmp_path_factory.mktemp("bare")
    src = work / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO_ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.jar")  # what the install must build itself
    for pkg in PACKAGES:
        shutil.copytree(REPO_ROOT / pkg, src / pkg, ignore=ignore)
    venv = work / "venv"
    # No pip in the venv (bootstrapping it costs more than the rest of the venv): this suite's pip installs into
    # it (``--python``) and resolves exactly as the venv's own would. ``--no-compile``: the venv's Python compiles
    # what a test imports, instead of pip compiling every installed module up front (most of the install's time).
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    assert made.returncode == 0, made.stderr
    install = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-compile"]
    installed = _run([*install, str(src)], timeout=900)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv


def test_bare_install_has_no_extras(bare_venv: Path) -> None:
    probe = "import importlib.util as u; print([m for m in ('rocksdict', 'pyspark', 'pyarrow') if u.find_spec(m)])"
    assert run_python(bare_venv, probe).strip() == "[]"


def test_bare_install_serves_the_registry(bare_venv: Path, tmp_path: Path) -> None:
    port = free_port()
    log_file = tmp_path / "serve.log"
    with log_file.open("wb") as out:
        proc = subprocess.Popen(
            [str(bare_venv / "bin" / "schemakit"), "serve", "--port", str(port), "--log", f"sqlite:///{tmp_path}/data"],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": ""},
        )
    try:

        def subjects() -> httpx.Response:
            assert proc.poll() is None, f"schemakit serve exited:\n{log_file.read_text()}"
            return httpx.get(f"http://127.0.0.1:{port}/subjects", timeout=1.0)

        answer = poll_until(
            subjects,
            lambda r: r.status_code != 503,  # 503 while the startup replay runs
            timeout=60,
            interval=0.1,
            what=f"schemakit serve to answer (its output: {log_file})",
            ignoring=(httpx.HTTPError,),
        )
        assert answer.status_code == 200
        assert answer.json() == []
        registered = httpx.post(
            f"http://127.0.0.1:{port}/subjects/bare-value/versions",
            json={"schema": '{"type": "string"}'},
            headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        )
        assert registered.status_code == 200, registered.text
        assert registered.json() == {"id": 1, "version": 1, "guid": "095d71cf-1255-6b9d-5e33-0ad575b3df5d"}
        # the schema browser's files ship in the package
        for asset in ("/ui", "/ui/app.js", "/ui/app.css"):
            assert httpx.get(f"http://127.0.0.1:{port}{asset}").status_code == 200, asset
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_command_line_loads_only_what_a_command_needs(bare_venv: Path) -> None:
    # `schemakit serve` goes through schemakit.cli: the admin commands' dependencies stay unloaded
    probe = (
        "import sys, schemakit.cli\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'serdes', 'streams', 'httpx', 'confluent_kafka'}))"
    )
    assert run_python(bare_venv, probe).strip() == "[]"
    checked = _run([str(bare_venv / "bin" / "schemakit"), "compat", "check", "--help"], cwd="/")
    assert checked.returncode == 0 and "--against-dir DIR" in checked.stdout, checked.stderr


def test_log_layer_imports_no_runtime(bare_venv: Path) -> None:
    probe = (
        "import sys, streams.log\n"
        "runtime = sorted(m for m in sys.modules if m.startswith('streams.') and not m.startswith('streams.log'))\n"
        "print(runtime, 'rocksdict' in sys.modules, 'confluent_kafka' in sys.modules)"
    )
    assert run_python(bare_venv, probe).strip() == "[] False False"


def test_missing_extras_name_what_to_install(bare_venv: Path) -> None:
    probe = (
        "import importlib\n"
        "for module in ('streams.state.rocksdb', 'serdes.spark'):\n"
        "    try:\n"
        "        importlib.import_module(module)\n"
        "    except ImportError as e:\n"
        "        print(module, '->', e)\n"
        "    else:\n"
        "        print(module, 'imported')\n"
    )
    printed = run_python(bare_venv, probe)
    lines = printed.strip().splitlines()
    assert len(lines) == 2, printed
    assert lines[0].startswith("streams.state.rocksdb -> ") and "pip install 'schemakit[streams]'" in lines[0]
    assert lines[1].startswith("serdes.spark -> ") and "pip install 'schemakit[spark]'" in lines[1]


def test_the_runtime_runs_on_memory_stores_without_the_streams_extra(bare_venv: Path) -> None:
    probe = (
        "from streams import StreamsBuilder, TopologyTestDriver\n"
        "b = StreamsBuilder()\n"
        "counts = b.stream('words', key=str, value=str).group_by_key().count(store='c')\n"
        "counts.to_stream().to('out', key=str, value=int)\n"
        "with TopologyTestDriver(b.build()) as d:\n"
        "    src = d.input_topic('words', key=str, value=str)\n"
        "    for w in ('a', 'b', 'a'):\n"
        "        src.pipe_input(w, w)\n"
        "    print(d.output_topic('out', key=str, value=int).read_key_values_to_map())\n"
    )
    assert run_python(bare_venv, probe).strip() == "{'a': 2, 'b': 1}"
