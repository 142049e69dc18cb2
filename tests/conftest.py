"""Shared pytest plugins: the registry server fixture (tests/server.py) and the Kafka test broker (tests/broker.py)."""

pytest_plugins = ["tests.server", "tests.broker"]
