"""The exporters page of the schema browser (#/exporters), in headless Chromium against a live registry: an
exporter whose destination does not answer shows ERROR, its lag and the reason; Pause and Resume work."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support.ports import free_port
from tests.support.registry_process import RegistryProcess
from tests.ui.test_browser import css, record, register, text, wait

pytestmark = pytest.mark.timeout(180)


def test_exporters_page_shows_state_lag_and_the_last_error(
    browser: Any, registry: RegistryProcess, api: httpx.Client, screenshot: Callable[[str], Any]
) -> None:
    register(api, "linked-value", record("Linked"))
    nowhere = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    body = {"name": "to-dr", "contextType": "NONE", "config": {"schema.registry.url": nowhere}}
    assert api.post("/exporters", json=body).status_code == 200
    try:
        browser.get(registry.url + "/ui/#/exporters")
        row = '#main tr[data-exporter="to-dr"]'
        wait(browser, lambda b: "ERROR" in text(b, row))
        cells = [c.text for c in css(browser, f"{row} td")]
        assert cells[0] == "to-dr" and cells[1].startswith(nowhere) and cells[3] == "ERROR"
        assert "record" in cells[5]  # behind by some records
        assert "destination unreachable" in text(browser, f"{row} td.last-error")
        screenshot("exporters")

        css(browser, f"{row} button")[0].click()  # Pause
        wait(browser, lambda b: "PAUSED" in text(b, row))
        assert api.get("/exporters/to-dr/status").json()["state"] == "PAUSED"
        css(browser, f"{row} button")[0].click()  # Resume
        wait(browser, lambda b: "PAUSED" not in text(b, row) and css(b, f"{row} button")[0].text == "Pause")
    finally:
        assert api.delete("/exporters/to-dr").status_code == 204
