"""Bounded caches: the LRU and TTL rules themselves, the client's caches under ``cache.capacity`` and
``cache.latest.ttl.sec`` (counted in requests to a real HTTP server, and against the real registry), and the
deserializers' plan caches."""

from __future__ import annotations

import asyncio
import json
import time

from serdes import AsyncRegistryClient, AvroDeserializer, AvroSerializer, RegistryClient, Schema, SerializationContext
from serdes.caches import BoundedDict, LruCache


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lru_evicts_the_least_recently_used() -> None:
    cache: LruCache[str, int] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now more recent than "b"
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c"), len(cache)) == (1, None, 3, 2)
    cache.discard_where(lambda k: k == "a")
    assert (cache.get("a"), len(cache)) == (None, 1)


def test_ttl_expires_entries_and_zero_stores_nothing() -> None:
    clock = FakeClock()
    cache: LruCache[str, int] = LruCache(10, ttl=5.0, clock=clock)
    cache.put("a", 1)
    clock.now += 4.9
    assert cache.get("a") == 1
    clock.now += 0.1
    assert cache.get("a") is None and len(cache) == 0
    never: LruCache[str, int] = LruCache(10, ttl=0)
    assert never.put("a", 1) == 1 and never.get("a") is None


def test_bounded_dict_keeps_the_newest_entries() -> None:
    d: BoundedDict[int, str] = BoundedDict(3)
    for i in range(5):
        d.put(i, str(i))
    assert d == {2: "2", 3: "3", 4: "4"}
    d.put(3, "three")  # replacing a key evicts nothing
    assert d == {2: "2", 3: "three", 4: "4"}


def test_client_caches_hold_cache_capacity_entries(scripted) -> None:
    srv = scripted((200, {"schema": '"string"'}))
    with RegistryClient.from_config({"url": srv.url, "cache.capacity": 2}) as c:
        for schema_id in (1, 2, 1, 3, 1, 2):  # 3 evicts 2 (1 was used more recently); 2 is fetched again
            c.get_schema(schema_id)
    assert [p for _, p, _, _ in srv.requests] == [
        "/schemas/ids/1",
        "/schemas/ids/2",
        "/schemas/ids/3",
        "/schemas/ids/2",
    ]

    async def main() -> None:
        async with AsyncRegistryClient(srv.url, cache_capacity=1) as c:
            for schema_id in (5, 5, 6, 5):
                await c.get_schema(schema_id)

    asyncio.run(main())
    assert [p for _, p, _, _ in srv.requests[4:]] == ["/schemas/ids/5", "/schemas/ids/6", "/schemas/ids/5"]


def test_latest_version_is_refreshed_after_cache_latest_ttl_sec(registry_url: str, topic: str) -> None:
    v1 = Schema('{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}')
    v2 = Schema(
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int","default":0}]}'
    )
    with (
        RegistryClient.from_config({"url": registry_url, "cache.latest.ttl.sec": 0.5}) as c,
        RegistryClient(registry_url) as other,
    ):
        c.register(topic, v1)
        assert c.get_latest_version(topic).version == 1
        other.register(topic, v2)  # another process registers a new version
        assert c.get_latest_version(topic).version == 1  # still cached
        time.sleep(0.55)
        assert c.get_latest_version(topic).version == 2


def test_a_serializer_following_the_latest_version_picks_up_a_new_one(registry_url: str, topic: str) -> None:
    subject = f"{topic}-value"
    ctx = SerializationContext(topic, "value")
    v1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    v2 = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 0}],
    }
    with RegistryClient(registry_url, latest_ttl=0.5) as c:
        id1 = c.register(subject, Schema(json.dumps(v1)))
        ser = AvroSerializer(c, use_latest_version=True)
        assert ser({"a": 1}, ctx)[1:5] == id1.to_bytes(4, "big")
        id2 = c.register(subject, Schema(json.dumps(v2)))
        assert ser({"a": 1, "b": 2}, ctx)[1:5] == id1.to_bytes(4, "big")
        time.sleep(0.55)
        assert ser({"a": 1, "b": 2}, ctx)[1:5] == id2.to_bytes(4, "big")


def test_deserializer_plans_are_bounded_by_the_clients_capacity(registry_url: str, topic: str) -> None:
    with RegistryClient(registry_url, cache_capacity=2) as c:
        frames = []
        for i in range(4):
            schema = {"type": "record", "name": f"R{i}", "fields": [{"name": "a", "type": "int"}]}
            frames.append(AvroSerializer(c, schema, subject=f"{topic}-{i}")({"a": i}))
        de = AvroDeserializer(c)
        assert [de(f) for f in frames + frames] == [{"a": i} for i in range(4)] * 2
        assert len(de._plans) == 2
