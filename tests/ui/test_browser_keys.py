"""The schema browser's DEK registry pages (#/keys, #/keys/NAME) in headless Chromium: KEKs with their KMS,
sharing and soft deletion, a KEK's DEKs by subject, algorithm and version, and never any key material."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support.registry_process import RegistryProcess
from tests.ui.test_browser import css, wait

pytestmark = pytest.mark.timeout(180)

KEKS = "/dek-registry/v1/keks"
MATERIAL = base64.b64encode(b"wrapped by the producer's KMS").decode()


def _ok(resp: httpx.Response) -> dict[str, Any]:
    assert resp.status_code in (200, 204), resp.text
    return resp.json() if resp.content else {}


def test_keys_pages_list_keks_and_deks_without_key_material(
    browser: Any, registry: RegistryProcess, api: httpx.Client, screenshot: Callable[[str], Any]
) -> None:
    _ok(
        api.post(
            KEKS, json={"name": "payments", "kmsType": "aws-kms", "kmsKeyId": "arn:aws:kms:eu:1:key/p", "doc": "cards"}
        )
    )
    shared = {"name": "shared", "kmsType": "local-kms", "kmsKeyId": "k", "kmsProps": {"secret": "s"}, "shared": True}
    _ok(api.post(KEKS, json=shared))
    _ok(api.post(KEKS, json={"name": "retired", "kmsType": "local-kms", "kmsKeyId": "k"}))
    _ok(api.delete(f"{KEKS}/retired"))
    for v in (1, 2):
        _ok(api.post(f"{KEKS}/payments/deks/orders-value", json={"version": v, "encryptedKeyMaterial": MATERIAL}))
    _ok(api.delete(f"{KEKS}/payments/deks/orders-value/versions/1"))
    _ok(
        api.post(
            f"{KEKS}/payments/deks/orders-value", json={"algorithm": "AES256_SIV", "encryptedKeyMaterial": MATERIAL}
        )
    )
    generated = _ok(api.post(f"{KEKS}/shared/deks/users-value", json={}))

    browser.get(registry.url + "/ui/#/keys")
    wait(browser, lambda b: len(css(b, "#keks tbody tr")) == 3)
    rows = {
        r.get_attribute("data-kek"): [c.text for c in r.find_elements("css selector", "td")]
        for r in css(browser, "#keks tbody tr")
    }
    assert rows["payments"][:5] == ["payments", "aws-kms", "arn:aws:kms:eu:1:key/p", "no", "cards"]
    assert rows["shared"][:4] == ["shared", "local-kms", "k", "yes"]
    assert rows["retired"][0] == "retired soft-deleted"
    screenshot("keks")

    css(browser, '#keks tr[data-kek="payments"] a')[0].click()
    wait(browser, lambda b: len(css(b, "#deks tbody tr")) == 2)
    deks = [[c.text for c in r.find_elements("css selector", "td")] for r in css(browser, "#deks tbody tr")]
    assert deks == [["orders-value", "AES256_GCM", "1 (soft-deleted), 2"], ["orders-value", "AES256_SIV", "1"]]
    screenshot("kek-deks")

    browser.get(registry.url + "/ui/#/keys/shared")
    wait(browser, lambda b: len(css(b, "#deks tbody tr")) == 1)
    page = browser.page_source
    for secret in (MATERIAL, generated["keyMaterial"], generated["encryptedKeyMaterial"]):
        assert secret not in page
