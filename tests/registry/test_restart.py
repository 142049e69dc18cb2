"""Restart = replay: after a restart on the same data every read answers the same bytes."""

from __future__ import annotations

import httpx

from tests.registry.schemas import record

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def snapshot(c: httpx.Client, subjects: list[str], max_id: int) -> dict[str, bytes]:
    paths = ["/subjects", "/subjects?deleted=true", "/config", "/mode", "/schemas?deleted=true"]
    for s in subjects:
        paths += [
            f"/subjects/{s}/versions?deleted=true",
            f"/subjects/{s}/versions",
            f"/config/{s}",
            f"/mode/{s}",
            f"/subjects/{s}/versions/latest",
        ]
        for v in range(1, 12):
            paths.append(f"/subjects/{s}/versions/{v}?deleted=true")
    paths += [f"/schemas/ids/{i}" for i in range(1, max_id + 2)]
    paths += [f"/schemas/ids/{i}/versions?deleted=true" for i in range(1, max_id + 2)]
    out = {}
    for p in paths:
        r = c.get(p)
        out[p] = r.status_code.to_bytes(2, "big") + r.content
    return out


def test_restart_answers_same_bytes(start_registry) -> None:  # type: ignore[no-untyped-def]
    rp = start_registry()
    subjects = [f"subject-{i:02d}" for i in range(20)]
    max_id = 0
    with httpx.Client(base_url=rp.url, timeout=30) as c:
        c.put("/config", json={"compatibility": "NONE"}, headers=CT)
        for i in range(200):
            s = subjects[i % 20]
            schema = record(f"R{i // 20}", ("a", "string"), (f"f{i}", "int", i))
            r = c.post(f"/subjects/{s}/versions", json={"schema": schema}, headers=CT)
            assert r.status_code == 200, r.text
            max_id = max(max_id, r.json()["id"])
        # the same schema under several subjects shares an id
        shared = record("Shared", ("x", "long"))
        ids = {
            c.post(f"/subjects/{s}/versions", json={"schema": shared}, headers=CT).json()["id"] for s in subjects[:3]
        }
        assert len(ids) == 1
        max_id += 1
        for s in subjects[:5]:
            assert c.delete(f"/subjects/{s}/versions/2").status_code == 200
        for s in subjects[5:7]:
            assert c.delete(f"/subjects/{s}").status_code == 200
        assert c.delete(f"/subjects/{subjects[6]}", params={"permanent": "true"}).status_code == 200
        assert c.delete(f"/subjects/{subjects[0]}/versions/2", params={"permanent": "true"}).status_code == 200
        for s in subjects[10:14]:
            assert c.put(f"/config/{s}", json={"compatibility": "FULL_TRANSITIVE"}, headers=CT).status_code == 200
        assert c.put(f"/mode/{subjects[15]}", json={"mode": "READONLY"}, headers=CT).status_code == 200
        assert c.delete(f"/config/{subjects[13]}").status_code == 200
        before = snapshot(c, subjects, max_id)
    assert sum(1 for v in before.values() if v[:2] == (200).to_bytes(2, "big")) > 400

    rp.restart()
    with httpx.Client(base_url=rp.url, timeout=30) as c:
        after = snapshot(c, subjects, max_id)
        # and new ids continue where they stopped
        r = c.post("/subjects/new/versions", json={"schema": record("New", ("n", "int"))}, headers=CT)
        assert r.json()["id"] == max_id + 1
    assert after == before
