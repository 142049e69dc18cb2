"""The schema browser in a real browser (``tests/support/browser.py``), against a registry server of the
module's own (so the subject list holds exactly what the module registered)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import browser as browsers
from tests.support.registry_process import RegistryProcess


@pytest.fixture(scope="module")
def registry(module_registry: RegistryProcess) -> RegistryProcess:
    return module_registry


@pytest.fixture(scope="module")
def api(registry: RegistryProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=registry.url, timeout=10) as client:
        yield client


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module."""
    driver = browsers.start_browser()
    yield driver
    driver.quit()


@pytest.fixture
def screenshot(browser: Any) -> Callable[[str], Path]:
    """Saves the page (from its top) as ``test-artifacts/ui/<name>.png`` and returns the path."""
    return lambda name: browsers.screenshot(browser, name)
