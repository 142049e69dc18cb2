"""The schema browser in a real browser: Debian's headless Chromium driven by Selenium, against a registry
server of the module's own (so the subject list holds exactly what the module registered).

Nothing is downloaded at test time: the browser and its driver are ``/usr/bin/chromium`` and
``/usr/bin/chromedriver`` (``make browser`` installs them); where they are missing the tests skip with that hint.
Screenshots go to ``test-artifacts/ui/`` (git-ignored).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.registry_process import RegistryProcess

CHROMIUM = os.environ.get("SCHEMAKIT_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SCHEMAKIT_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"
INSTALL_HINT = "make browser (as root), or apt-get install chromium chromium-driver"


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
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        pytest.skip(f"no Chromium at {CHROMIUM} / {CHROMEDRIVER}: {INSTALL_HINT}")
    pytest.importorskip("selenium", reason="selenium is in the test extra: pip install -e '.[test]'")
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must never fetch a browser or driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1360,900",
        "--force-prefers-reduced-motion",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


@pytest.fixture
def screenshot(browser: Any) -> Callable[[str], Path]:
    """Saves the page (from its top) as ``test-artifacts/ui/<name>.png`` and returns the path."""

    def save(name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.execute_script("window.scrollTo(0, 0)")
        path = ARTIFACTS / f"{name}.png"
        browser.save_screenshot(str(path))
        return path

    return save
