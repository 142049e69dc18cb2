"""Moved to ``tests/support/broker.py``. Kept only for ``tests/log/conftest.py``, which imports
``TANSU_MISSING`` from here until its own move lands; import from ``tests.support.broker`` instead."""

from tests.support.broker import TANSU_MISSING

__all__ = ["TANSU_MISSING"]
