"""Shared pytest plugins: the registry server fixture (tests/server.py), the Kafka test broker (tests/broker.py),
certificates, token issuers and users files (tests/credentials.py)."""

pytest_plugins = ["tests.server", "tests.broker", "tests.credentials"]
