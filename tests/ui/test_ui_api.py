"""The /ui/ pages and the /ui/api/ helper endpoints over HTTP, against a live registry (no browser)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.support.registry_process import RegistryProcess


def record(name: str, *fields: dict[str, object]) -> str:
    return json.dumps({"type": "record", "name": name, "fields": [{"name": "id", "type": "long"}, *fields]})


def register(api: httpx.Client, subject: str, schema: str) -> int:
    resp = api.post(f"/subjects/{subject}/versions", json={"schema": schema})
    assert resp.status_code == 200, resp.text
    return int(resp.json()["id"])


def names(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [s["subject"] for s in answer.json()["subjects"]]


def test_the_page_and_its_assets_are_served_from_the_package(api: httpx.Client) -> None:
    for path in ("/ui", "/ui/"):
        page = api.get(path)
        assert page.status_code == 200
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert '<script src="/ui/app.js" defer></script>' in page.text
    assert api.get("/ui/app.js").headers["content-type"] == "text/javascript; charset=utf-8"
    assert api.get("/ui/app.css").headers["content-type"] == "text/css; charset=utf-8"
    for asset in ("/ui/", "/ui/app.js", "/ui/app.css"):  # nothing fetched from elsewhere (no CDN)
        text = api.get(asset).text
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, asset
    assert api.get("/ui/missing.js").json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
    # not part of Confluent's API document
    assert not [p for p in api.get("/openapi.json").json()["paths"] if p.startswith("/ui")]


def test_subject_page_is_filtered_and_paged_on_the_server(api: httpx.Client) -> None:
    ids = {letter: register(api, f"paging-{letter}", record(f"P{letter}")) for letter in "abcde"}

    def summary(letter: str) -> dict[str, object]:
        """A subject of one Avro version, under the default compatibility and mode."""
        return {
            "subject": f"paging-{letter}",
            "latestVersion": 1,
            "versions": 1,
            "id": ids[letter],
            "schemaType": "AVRO",
            "compatibility": "BACKWARD",
            "mode": "READWRITE",
            "deleted": False,
        }

    first = api.get("/ui/api/subjects", params={"q": "PAGING-", "limit": 2})
    assert first.json() == {"total": 5, "offset": 0, "limit": 2, "subjects": [summary("a"), summary("b")]}
    assert names(api.get("/ui/api/subjects", params={"q": "paging-", "offset": 2, "limit": 2})) == [
        "paging-c",
        "paging-d",
    ]
    assert names(api.get("/ui/api/subjects", params={"q": "paging-", "offset": 4, "limit": 2})) == ["paging-e"]

    assert api.put("/config/paging-c", json={"compatibility": "FULL"}).status_code == 200
    assert names(api.get("/ui/api/subjects", params={"q": "paging-", "compatibility": "full"})) == ["paging-c"]
    assert names(api.get("/ui/api/subjects", params={"q": "paging-", "type": "JSON"})) == []

    # a change shows on the next read (the read cache empties when the state moves)
    assert api.delete("/subjects/paging-e").status_code == 200
    assert names(api.get("/ui/api/subjects", params={"q": "paging-"})) == [
        "paging-a",
        "paging-b",
        "paging-c",
        "paging-d",
    ]
    only = api.get("/ui/api/subjects", params={"q": "paging-", "deleted": "only"}).json()["subjects"]
    assert [(s["subject"], s["versions"], s["deleted"]) for s in only] == [("paging-e", 0, True)]


@pytest.mark.parametrize(
    ("path", "status", "error_code", "message"),
    [
        ("/ui/api/subjects?deleted=all", 400, 400, "Query parameter 'deleted' is invalid: 'all'"),
        ("/ui/api/subjects?limit=ten", 400, 400, "Query parameter 'limit' must be an integer, got 'ten'"),
        ("/ui/api/subjects/nobody", 404, 40401, "Subject 'nobody' not found."),
        ("/ui/api/subjects/nobody/compare?old=1&new=2", 404, 40401, "Subject 'nobody' not found."),
        ("/ui/api/subjects/compared/compare?old=1&new=9", 404, 40402, "Version 9 not found."),
        ("/ui/api/subjects/compared/compare?new=1", 400, 400, "Query parameter 'old' is required"),
        ("/ui/api/subjects/compared/compare?old=0&new=1", 400, 400, "Query parameter 'old' is out of range: '0'"),
    ],
)
def test_bad_requests_get_confluents_error_answers(
    api: httpx.Client, path: str, status: int, error_code: int, message: str
) -> None:
    if not api.get("/subjects/compared/versions").is_success:
        register(api, "compared", record("Compared"))
    answer = api.get(path)
    assert (answer.status_code, answer.json()) == (status, {"error_code": error_code, "message": message})


def test_subject_detail_and_comparison(api: httpx.Client) -> None:
    register(api, "detail-value", record("Detail"))
    assert api.put("/config/detail-value", json={"compatibility": "NONE"}).status_code == 200
    second = register(api, "detail-value", record("Detail", {"name": "extra", "type": "int"}))
    assert api.delete("/subjects/detail-value/versions/1").status_code == 200
    detail = api.get("/ui/api/subjects/detail-value").json()
    assert detail["compatibility"] == "NONE"
    assert [(v["version"], v["deleted"], v["referencedBy"]) for v in detail["versions"]] == [
        (1, True, []),
        (2, False, []),
    ]
    assert detail["versions"][1]["id"] == second
    assert detail["versions"][1]["schema"] == record("Detail", {"name": "extra", "type": "int"}).replace(" ", "")

    # a soft-deleted version can still be compared; each level answers with Confluent's reasons
    levels = {
        lv["level"]: (lv["is_compatible"], lv["reasons"])
        for lv in api.get("/ui/api/subjects/detail-value/compare?old=1&new=2").json()["levels"]
    }
    missing_default = ["READER_FIELD_MISSING_DEFAULT_VALUE /fields/1"]
    assert levels == {
        "NONE": (True, []),
        "BACKWARD": (False, missing_default),
        "BACKWARD_TRANSITIVE": (False, missing_default),
        "FORWARD": (True, []),
        "FORWARD_TRANSITIVE": (True, []),
        "FULL": (False, missing_default),
        "FULL_TRANSITIVE": (False, missing_default),
    }


def test_whoami_offers_writes_unless_the_mode_is_read_only(api: httpx.Client, registry: RegistryProcess) -> None:
    register(api, "locked-value", record("Locked"))
    assert api.get("/ui/api/whoami").json() == {"principal": None, "canWrite": True, "mode": "READWRITE"}
    assert api.put("/mode/locked-value", json={"mode": "READONLY"}).status_code == 200
    answer = api.get("/ui/api/whoami", params={"subject": "locked-value"})
    assert answer.json() == {"principal": None, "canWrite": False, "mode": "READONLY"}
    assert answer.headers["cache-control"] == "no-store"
    assert api.get("/ui/api/whoami", params={"subject": "other"}).json()["canWrite"] is True
