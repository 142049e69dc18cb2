"""The schema browser at /ui/, driven in headless Chromium against a live registry (see conftest.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support.registry_process import RegistryProcess

pytestmark = pytest.mark.timeout(180)


def record(name: str, *fields: dict[str, Any]) -> str:
    return json.dumps({"type": "record", "name": name, "fields": [{"name": "id", "type": "long"}, *fields]})


def register(api: httpx.Client, subject: str, schema: str, schema_type: str = "AVRO") -> int:
    resp = api.post(f"/subjects/{subject}/versions", json={"schema": schema, "schemaType": schema_type})
    assert resp.status_code == 200, resp.text
    return int(resp.json()["id"])


def wait(browser: Any, predicate: Callable[[Any], Any], timeout: float = 20) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # the pages re-render as answers arrive: an element read mid-render is read again
    return WebDriverWait(browser, timeout, ignored_exceptions=[StaleElementReferenceException]).until(predicate)


def css(browser: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(browser.find_elements(By.CSS_SELECTOR, selector))


def text(browser: Any, selector: str) -> str:
    """The text of the first element matching ``selector``, "" while there is none."""
    found = css(browser, selector)
    return str(found[0].text) if found else ""


def listed(browser: Any) -> list[str]:
    return [row.get_attribute("data-subject") for row in css(browser, "#subjects tbody tr")]


def wait_listed(browser: Any, expected: list[str]) -> None:
    try:
        wait(browser, lambda b: listed(b) == expected)
    except Exception:
        pytest.fail(f"subject list {listed(browser)} != {expected}")


@pytest.fixture(scope="module")
def subjects(api: httpx.Client) -> None:
    """customers-value and orders-value (Avro), events-value (JSON Schema), gone-value (soft-deleted)."""
    register(api, "orders-value", record("Order"))
    register(api, "customers-value", record("Customer"))
    register(api, "events-value", json.dumps({"type": "object", "properties": {"id": {"type": "integer"}}}), "JSON")
    register(api, "gone-value", record("Gone"))
    assert api.delete("/subjects/gone-value").status_code == 200


def test_subject_list_shows_registered_subjects_and_filters_them(
    browser: Any, registry: RegistryProcess, subjects: None, screenshot: Callable[[str], Any]
) -> None:
    from selenium.webdriver.support.ui import Select

    browser.get(registry.url + "/ui/")
    wait_listed(browser, ["customers-value", "events-value", "orders-value"])
    row = css(browser, '#subjects tr[data-subject="events-value"] td')
    assert [c.text for c in row] == ["events-value", "JSON", "1", "1", "3", "BACKWARD", "READWRITE"]
    assert css(browser, "#page-info")[0].text == "1\u20133 of 3"  # an en dash
    screenshot("subjects")

    search = css(browser, "#search")[0]
    search.send_keys("ORD")
    wait_listed(browser, ["orders-value"])
    assert browser.current_url.endswith("#/?q=ORD")
    search.clear()
    search.send_keys(" ")  # clear() fires no input event
    Select(css(browser, "#filter-type")[0]).select_by_value("JSON")
    wait_listed(browser, ["events-value"])
    Select(css(browser, "#filter-type")[0]).select_by_value("")
    Select(css(browser, "#filter-deleted")[0]).select_by_value("only")
    wait_listed(browser, ["gone-value"])
    Select(css(browser, "#filter-deleted")[0]).select_by_value("include")
    wait_listed(browser, ["customers-value", "events-value", "gone-value", "orders-value"])

    # the search box is one key away, and the filters survive a reload (they live in the address)
    browser.get(registry.url + "/ui/#/?type=AVRO&q=value")
    wait_listed(browser, ["customers-value", "orders-value"])


def test_diff_shows_the_added_field_and_each_levels_verdict(
    browser: Any, registry: RegistryProcess, api: httpx.Client, screenshot: Callable[[str], Any]
) -> None:
    assert api.put("/config/shipments-value", json={"compatibility": "NONE"}).status_code == 200
    register(api, "shipments-value", record("Shipment"))
    register(api, "shipments-value", record("Shipment", {"name": "carrier", "type": "string"}))

    browser.get(registry.url + "/ui/#/s/shipments-value/diff?old=1&new=2")
    wait(browser, lambda b: len(css(b, "#levels tbody tr")) == 7)
    verdicts = {
        r.get_attribute("data-level"): r.find_elements("css selector", "td")[1].text
        for r in css(browser, "#levels tbody tr")
    }
    assert verdicts == {
        "NONE": "compatible",
        "BACKWARD": "incompatible",
        "BACKWARD_TRANSITIVE": "incompatible",
        "FORWARD": "compatible",
        "FORWARD_TRANSITIVE": "compatible",
        "FULL": "incompatible",
        "FULL_TRANSITIVE": "incompatible",
    }
    backward = css(browser, '#levels tr[data-level="BACKWARD"] td')[2].text
    assert backward == "READER_FIELD_MISSING_DEFAULT_VALUE /fields/1"
    inserted = [c.text for c in css(browser, "#diff td.ins")]
    deleted = [c.text for c in css(browser, "#diff td.del")]
    assert any('"name": "carrier"' in t for t in inserted), inserted
    assert not any("carrier" in t for t in deleted), deleted
    screenshot("diff")


def test_subject_page_shows_versions_references_and_referrers(
    browser: Any, registry: RegistryProcess, api: httpx.Client
) -> None:
    money_id = register(
        api,
        "money",
        json.dumps(
            {"type": "record", "name": "Money", "namespace": "shop", "fields": [{"name": "cents", "type": "long"}]}
        ),
    )
    price = {"type": "record", "name": "Price", "fields": [{"name": "amount", "type": "shop.Money"}]}
    body = {"schema": json.dumps(price), "references": [{"name": "shop.Money", "subject": "money", "version": 1}]}
    resp = api.post("/subjects/prices-value/versions", json=body)
    assert resp.status_code == 200, resp.text
    price_id = resp.json()["id"]

    browser.get(registry.url + "/ui/#/s/money")
    wait(browser, lambda b: css(b, "#referenced-by li"))
    assert css(browser, "#version-title")[0].text == f"Version 1 · id {money_id} · AVRO"
    assert [li.text for li in css(browser, "#referenced-by li")] == [f"prices-value version 1 (id {price_id})"]
    css(browser, "#referenced-by a")[0].click()
    wait(browser, lambda b: css(b, "#references li"))
    assert [li.text for li in css(browser, "#references li")] == ["shop.Money → money version 1"]
    assert '"amount"' in css(browser, "pre.code")[0].text


def test_editor_reports_an_incompatible_change_and_registers_a_compatible_one(
    browser: Any, registry: RegistryProcess, api: httpx.Client, screenshot: Callable[[str], Any]
) -> None:
    register(api, "payments-value", record("Payment"))
    browser.get(registry.url + "/ui/#/s/payments-value/new")
    editor = wait(browser, lambda b: css(b, "#editor-schema"))[0]
    wait(browser, lambda b: '"Payment"' in editor.get_attribute("value"))

    def check(schema: str) -> str:
        browser.execute_script("arguments[0].value = arguments[1]", editor, schema)
        editor.send_keys(" ")  # a real keystroke: the page sees the edit
        css(browser, "#check")[0].click()
        return str(wait(browser, lambda b: text(b, "#editor-result .notice")))

    result = check(record("Payment", {"name": "currency", "type": "string"}))
    assert result.startswith("Incompatible:\n{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE'")
    assert "The field 'currency' at path '/fields/1' in the new schema has no default value" in result
    assert not css(browser, "#register")[0].is_enabled()
    screenshot("editor-incompatible")

    result = check(record("Payment", {"name": "currency", "type": "string", "default": "EUR"}))
    assert result == "Compatible with the versions the subject's compatibility level names."
    css(browser, "#register")[0].click()
    wait(browser, lambda b: "Registered" in text(b, "#editor-result .notice"))
    latest = api.get("/subjects/payments-value/versions/latest").json()
    assert latest["version"] == 2
    assert text(browser, "#editor-result .notice") == f"Registered: id {latest['id']}, version 2."
    assert [f["name"] for f in json.loads(latest["schema"])["fields"]] == ["id", "currency"]

    # a new subject: named in the editor, compatible with nothing before it
    browser.get(registry.url + "/ui/#/new")
    wait(browser, lambda b: css(b, "#editor-subject"))[0].send_keys("refunds-value")
    editor = css(browser, "#editor-schema")[0]
    assert check(record("Refund")) == "Compatible with the versions the subject's compatibility level names."
    css(browser, "#register")[0].click()
    wait(browser, lambda b: "Registered" in text(b, "#editor-result .notice"))
    created = api.get("/subjects/refunds-value/versions/latest").json()
    assert text(browser, "#editor-result .notice") == f"Registered: id {created['id']}, version 1."


def test_write_controls_are_hidden_where_the_caller_may_not_write(
    browser: Any, registry: RegistryProcess, api: httpx.Client
) -> None:
    from selenium.webdriver.support.ui import Select

    register(api, "audit-value", record("Audit"))
    browser.get(registry.url + "/ui/#/s/audit-value")
    wait(browser, lambda b: css(b, "#version-title"))
    wait(browser, lambda b: "readonly" not in b.find_element("tag name", "body").get_attribute("class"))
    assert css(browser, 'a[href="#/s/audit-value/new"]')[0].is_displayed()

    # the subject's own settings, changed from the page
    Select(css(browser, "#subject-level")[0]).select_by_value("FULL")
    next(b for b in css(browser, "button.write") if b.text == "Save compatibility").click()
    wait(browser, lambda b: "Compatibility set to FULL." in text(b, ".notice"))
    assert api.get("/config/audit-value").json() == {"compatibilityLevel": "FULL"}

    assert api.put("/mode/audit-value", json={"mode": "READONLY"}).status_code == 200
    browser.refresh()
    wait(browser, lambda b: "read-only" in css(b, "#who")[0].text)
    writes = css(browser, ".write")
    assert writes, "the page has write controls to hide"
    assert [w.text for w in writes if w.is_displayed()] == []
    assert css(browser, "#who")[0].text == "mode READONLY · read-only"


def test_keyboard_alone_finds_and_opens_a_subject(browser: Any, registry: RegistryProcess, subjects: None) -> None:
    from selenium.webdriver.common.keys import Keys

    browser.get(registry.url + "/ui/")
    wait(browser, lambda b: "orders-value" in listed(b))
    active = browser.switch_to.active_element
    active.send_keys("/")
    assert browser.switch_to.active_element.get_attribute("id") == "search"
    browser.switch_to.active_element.send_keys("orders")
    wait_listed(browser, ["orders-value"])
    for _ in range(4):  # type, compatibility, deleted, then the subject's link
        browser.switch_to.active_element.send_keys(Keys.TAB)
    assert browser.switch_to.active_element.text == "orders-value"
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait(browser, lambda b: text(b, "h1") == "orders-value")
    assert text(browser, "#version-title").startswith("Version 1 · id ")


def test_dark_mode_follows_the_systems_preference(
    browser: Any, registry: RegistryProcess, api: httpx.Client, screenshot: Callable[[str], Any]
) -> None:
    def background() -> str:
        return str(browser.execute_script("return getComputedStyle(document.body).backgroundColor"))

    register(api, "inventory-value", record("Item"))
    register(api, "inventory-value", record("Item", {"name": "sku", "type": "string", "default": ""}))
    register(
        api,
        "inventory-value",
        record(
            "Item", {"name": "sku", "type": "string", "default": ""}, {"name": "count", "type": "int", "default": 0}
        ),
    )
    browser.get(registry.url + "/ui/#/s/inventory-value")
    wait(browser, lambda b: text(b, "#version-title").startswith("Version 3 "))
    assert background() == "rgb(255, 255, 255)"
    features = [{"name": "prefers-color-scheme", "value": "dark"}]
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": features})
    try:
        wait(browser, lambda b: background() == "rgb(21, 24, 29)")
        screenshot("subject-dark")
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
