"""``serdes.fastavro_core`` checks fastavro's private cores at import: the installed fastavro passes, and cores with
other parameters or other results are refused with one error naming the supported versions."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastavro import _read, _write

from serdes import fastavro_core
from serdes.fastavro_core import SUPPORTED, UnsupportedFastavro, check_core

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_fastavro_passes_and_its_compiled_cores_are_used() -> None:
    check_core(_write.write_data, _read._read_data)  # type: ignore[attr-defined]
    assert fastavro_core.FAST
    assert fastavro_core.write_data is _write.write_data  # type: ignore[attr-defined]
    assert fastavro_core.read_data is _read._read_data  # type: ignore[attr-defined]


def test_a_core_with_other_parameters_is_refused() -> None:
    def write_data(fo: bytearray, datum: Any, schema: Any, named_schemas: dict, options: dict) -> None:
        """A write_data that lost its ``fname``: the options dict would land in its place."""

    with pytest.raises(UnsupportedFastavro) as e:
        check_core(write_data, fastavro_core.read_data)
    assert f"supports {SUPPORTED}" in str(e.value)
    assert "write_data takes (fo, datum, schema, named_schemas, options), where " in str(e.value)
    assert "(fo, datum, schema, named_schemas, fname, options) is expected" in str(e.value)


def test_a_core_with_keyword_only_parameters_is_refused() -> None:
    def read_data(fo: io.BytesIO, writer_schema: Any, named_schemas: dict, *, reader_schema: Any, options: dict) -> Any:
        return None

    with pytest.raises(UnsupportedFastavro, match=r"_read\._read_data takes \(fo, writer_schema, named_schemas, \*,"):
        check_core(fastavro_core.write_data, read_data)


def test_a_core_with_the_parameters_but_other_results_is_refused() -> None:
    def read_data(
        fo: io.BytesIO, writer_schema: Any, named_schemas: dict, reader_schema: Any = None, options: Any = None
    ) -> Any:
        return fo.read()  # the bytes, not the value

    with pytest.raises(UnsupportedFastavro, match=r"-3 as a long was written as b'\\x05' and read back as b'\\x05'"):
        check_core(fastavro_core.write_data, read_data)


def test_importing_serdes_with_changed_cores_fails_naming_the_supported_versions() -> None:
    probe = (
        "import fastavro._write\n"
        "fastavro._write.write_data = lambda fo, datum, schema, named_schemas, options: None\n"
        "import serdes\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=False)
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("serdes.fastavro_core.UnsupportedFastavro: serdes calls fastavro's compiled write_data")
    assert f"supports {SUPPORTED}" in last
