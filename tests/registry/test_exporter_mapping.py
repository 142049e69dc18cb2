"""Which subjects an exporter takes and what they are called at the destination (``registry/exporters/
definition.py``): context types, subject patterns, the rename format, references, and the definition's checks."""

from __future__ import annotations

import pytest

from registry.errors import ApiError
from registry.exporters.definition import ExporterDefinition, SubjectMapping

URL = {"schema.registry.url": "http://dr:8081"}


def mapping(**fields: object) -> SubjectMapping:
    definition = ExporterDefinition(name="e", config=URL, **fields)  # type: ignore[arg-type]
    definition.check()
    return SubjectMapping(definition)


def test_auto_is_a_context_named_after_the_source_registry() -> None:
    m = mapping(source_id="sr-east")
    assert m.subject("orders") == ":.sr-east:orders"
    assert m.subject(":.prod:orders") == ":.sr-east.prod:orders"
    assert m.settings_subject(None) == ":.sr-east:"  # the source's global config: the context's own
    assert ExporterDefinition(name="e", config=URL).to_json()["context"] == ".schema-registry"


def test_custom_prefixes_the_source_context_and_none_keeps_it() -> None:
    custom = mapping(context_type="CUSTOM", context="dc1", subject_rename_format="dc_${subject}")
    assert custom.subject("orders") == ":.dc1:dc_orders"
    assert custom.subject(":.prod:orders") == ":.dc1.prod:dc_orders"
    assert custom.subject(":.prod:") == ":.dc1.prod:"  # a context's own config is not renamed
    none = mapping(context_type="NONE")
    assert none.subject(":.prod:orders") == ":.prod:orders" and none.subject("orders") == "orders"
    assert none.settings_subject(None) is None  # the destination's global config


def test_subject_patterns() -> None:
    m = mapping(subjects=("orders*", ":.prod:pay?ents", ":.a*:x"))
    assert m.covers("orders-value") and not m.covers("payments")
    assert m.covers(":.prod:payments") and not m.covers(":.prod:orders-value")
    assert m.covers(":.abc:x") and not m.covers(":.b:x")
    assert m.covers_context(".") and m.covers_context(".prod") and not m.covers_context(".other")
    everything = mapping(subjects=(":*:",))
    assert everything.covers(":.any:thing") and everything.covers("plain")
    assert not mapping().covers(":.prod:orders")  # "*" is the default context's subjects only


def test_references_are_renamed_and_stay_relative_within_a_context() -> None:
    m = mapping(context_type="CUSTOM", context="dc1", subject_rename_format="x_${subject}")
    refs = [{"name": "Hash", "subject": "common", "version": 1}, {"name": "P", "subject": ":.prod:p", "version": 2}]
    assert m.references("orders", refs) == [
        {"name": "Hash", "subject": "x_common", "version": 1},
        {"name": "P", "subject": ":.dc1.prod:x_p", "version": 2},
    ]


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"name": ""}, 40950),
        ({"name": "a/b"}, 40950),
        ({"config": {}}, 40951),
        ({"config": {"schema.registry.url": "ftp://x"}}, 40951),
        ({"context_type": "SOMETIMES"}, 40951),
        ({"context_type": "CUSTOM"}, 40951),
        ({"context_type": "CUSTOM", "context": "."}, 40951),
        ({"subjects": ()}, 40952),
        ({"subject_rename_format": ":.ctx:${subject}"}, 40951),
    ],
)
def test_definition_checks(fields: dict[str, object], code: int) -> None:
    definition = ExporterDefinition(**{"name": "e", "config": URL, **fields})  # type: ignore[arg-type]
    with pytest.raises(ApiError) as raised:
        definition.check()
    assert raised.value.error_code == code and raised.value.status == 409
