"""schemakit's schema registry: Confluent's REST API over a log (see docs/architecture.md)."""

__version__ = "0.1.0"
