"""The ``schemakit`` command line: the top floor of the layers (docs/architecture.md).

``schemakit serve`` (the registry, ``registry/cli.py``), ``schemakit streams run`` (``streams/cli.py``),
``schemakit registry …`` (an admin client for any Confluent-compatible registry, over its public API) and
``schemakit compat check`` (compatibility checks of schema files, no registry needed). Every command module
imports what it needs when it runs, so ``schemakit serve`` loads nothing of the others.
"""

from __future__ import annotations

from schemakit.cli import main

__all__ = ["main"]
