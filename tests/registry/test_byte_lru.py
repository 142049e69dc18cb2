"""The byte-bounded LRU map behind the parse and protoc caches."""

from __future__ import annotations

from registry.byte_lru import ByteLru


def test_bounded_by_the_bytes_of_its_values_dropping_the_least_recently_used() -> None:
    lru: ByteLru[str, str] = ByteLru(100)
    for key in "abcd":
        lru.put(key, key.upper(), 30)
    assert (len(lru), lru.bytes, lru.get("a")) == (3, 90, None)  # "a" went to make room for "d"
    assert lru.get("b") == "B"  # now the most recent: "c" goes next
    lru.put("e", "E", 40)
    assert ([k for k in "bcde" if lru.get(k) is not None], lru.bytes) == (["b", "d", "e"], 100)


def test_a_value_past_the_whole_budget_is_not_kept_and_replacing_a_key_recounts_it() -> None:
    lru: ByteLru[str, str] = ByteLru(100)
    lru.put("a", "A", 60)
    lru.put("huge", "H", 101)
    assert (lru.get("huge"), lru.get("a"), lru.bytes) == (None, "A", 60)
    lru.put("a", "A2", 10)
    assert (len(lru), lru.bytes, lru.get("a")) == (1, 10, "A2")
