"""The Kafka backend passes confluent-kafka's ``Producer.produce`` its arguments by position: the check, at import,
that the installed client takes them in that order, and the confluent-kafka range pyproject.toml pins for it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import confluent_kafka
import pytest

from streams.log.kafka.positional import PRODUCE_ORDER, SUPPORTED_CONFLUENT_KAFKA, check_produce_order

REPO = Path(__file__).resolve().parents[2]


def test_the_installed_client_takes_the_arguments_in_our_order() -> None:
    check_produce_order(confluent_kafka.Producer, PRODUCE_ORDER)


@pytest.mark.parametrize(
    ("order", "named"),
    [
        # The docstring's order: it leaves out ``callback``, the parser's fifth argument.
        (
            ("topic", "value", "key", "partition", "on_delivery", "timestamp", "headers"),
            "'on_delivery' is not argument 5",
        ),
        (
            ("topic", "key", "value", "partition", "callback", "on_delivery", "timestamp", "headers"),
            "'key' is not argument 2",
        ),
        (
            ("topic", "value", "key", "partition", "callback", "on_delivery", "headers", "timestamp"),
            "'headers' is not argument 7",
        ),
        (
            ("topic", "value", "key", "partition", "callback", "on_delivery", "timestamp", "headers", "extra"),
            "it does not take 9 arguments",
        ),
    ],
    ids=["docstring", "key-value-swapped", "last-two-swapped", "one-more"],
)
def test_a_different_order_is_refused_naming_the_supported_range(order: tuple[str, ...], named: str) -> None:
    with pytest.raises(ImportError) as refused:
        check_produce_order(confluent_kafka.Producer, order)
    message = str(refused.value)
    assert message.startswith(f"confluent-kafka {confluent_kafka.__version__} is not supported")
    assert named in message
    assert message.endswith(f"pip install 'confluent-kafka{SUPPORTED_CONFLUENT_KAFKA}'")


def test_pyproject_pins_the_supported_range() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + project["optional-dependencies"]["test"]
    pins = [r for r in requirements if r.startswith("confluent-kafka")]
    assert len(pins) == 2  # the dependency and the test extra's (with the schema registry client's extras)
    assert all(pin.endswith(SUPPORTED_CONFLUENT_KAFKA) for pin in pins), pins
