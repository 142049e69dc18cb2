"""Reports why tests/spark is skipped on a machine without a JDK or the spark extra; otherwise checks the jar."""

from __future__ import annotations

import zipfile

import pytest

from tests.support.spark import missing_prerequisite


def test_spark_prerequisites_and_jar() -> None:
    missing = missing_prerequisite()
    if missing is not None:
        pytest.skip(missing)
    from serdes.spark import build_jar

    path = build_jar.build()
    with zipfile.ZipFile(path) as jar:
        names = set(jar.namelist())
    assert {
        "schemakit/spark/AvroRegistryDecoder.class",
        "schemakit/spark/AvroCatalystReader.class",
        "schemakit/spark/RegistryDecodeExpression.class",
        "schemakit/spark/RegistrySchemas.class",
    } <= names
    assert build_jar.up_to_date()
