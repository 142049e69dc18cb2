"""A real browser for the schema browser's tests: Debian's headless Chromium driven by Selenium.

Nothing is downloaded at test time: the browser and its driver are ``/usr/bin/chromium`` and
``/usr/bin/chromedriver`` (``make browser`` installs them; ``SCHEMAKIT_TEST_CHROMIUM`` and
``SCHEMAKIT_TEST_CHROMEDRIVER`` point elsewhere); where they are missing the tests skip with that hint.
Screenshots go to ``test-artifacts/ui/`` (git-ignored).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support import REPO_ROOT

CHROMIUM = os.environ.get("SCHEMAKIT_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SCHEMAKIT_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")
ARTIFACTS = REPO_ROOT / "test-artifacts" / "ui"
INSTALL_HINT = "make browser (as root), or apt-get install chromium chromium-driver"


def start_browser() -> Any:
    """A headless Chromium (a Selenium driver); skips the calling test where there is none."""
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
    return driver


def screenshot(browser: Any, name: str) -> Path:
    """Saves the page (from its top) as ``test-artifacts/ui/<name>.png`` and returns the path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.execute_script("window.scrollTo(0, 0)")
    path = ARTIFACTS / f"{name}.png"
    browser.save_screenshot(str(path))
    return path
