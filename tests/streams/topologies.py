"""Topologies and data shared by the end-to-end tests and the subprocess runner."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from streams import StreamsApp, StreamsBuilder, Suppressed, TimeWindows, Topology, VersionedStoreSpec
from tests.support.ports import free_port

# The windowed end-to-end tests: hopping windows of 10 s advancing by 5 s, 2 s grace.
CLICK_WINDOWS = TimeWindows.of_size_and_grace(10_000, 2_000).advance_by(5_000)


def word_count(text_topic: str, out_topic: str) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(text_topic, key=str, value=str)
        .flat_map_values(lambda line: line.lower().split())
        .group_by(lambda _, word: word, key=str, value=str)
        .count(store="counts")
        .to_stream()
        .to(out_topic, key=str, value=int)
    )
    return b.build()


def order_totals(orders_topic: str, out_topic: str, store_kind: str | None = None) -> Topology:
    """The issue's example: paid orders, grouped by customer, aggregated into (count, amount)."""
    b = StreamsBuilder()
    (
        b.stream(orders_topic, key=str, value="json")
        .filter(lambda _, o: o["paid"])
        .group_by(lambda _, o: o["customer"], key=str)
        .aggregate(
            initial=lambda: {"count": 0, "amount": 0},
            add=lambda _, o, t: {"count": t["count"] + 1, "amount": t["amount"] + o["amount"]},
            store="totals",
            value="json",
            kind=store_kind,
        )
        .to_stream()
        .to(out_topic, key=str, value="json")
    )
    return b.build()


def make_orders(n: int, start: int = 0, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed + start)
    return [
        {"id": i, "customer": f"c{rng.randrange(13)}", "amount": rng.randrange(1, 1000), "paid": rng.random() < 0.8}
        for i in range(start, start + n)
    ]


def reference_totals(orders: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    totals: dict[str, dict[str, int]] = {}
    for o in orders:
        if o["paid"]:
            t = totals.setdefault(o["customer"], {"count": 0, "amount": 0})
            t["count"] += 1
            t["amount"] += o["amount"]
    return totals


def reference_word_count(lines: list[str]) -> dict[str, int]:
    return dict(Counter(w for line in lines for w in line.lower().split()))


def make_lines(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    return [" ".join(rng.choice(words) for _ in range(rng.randrange(1, 6))) for _ in range(n)]


def click_windows(clicks_topic: str, finals_topic: str, cache: bool = True) -> Topology:
    """Clicks keyed by page, counted per hopping window; one final count per window (suppressed until the
    window closes) to ``finals_topic``. The store is queryable as ``clicks-per-window``. With the cache the
    counts reach the suppression at commits; without, at once (so finals are also emitted between commits)."""
    b = StreamsBuilder()
    (
        b.stream(clicks_topic, key=str, value="json")
        .group_by_key()
        .windowed_by(CLICK_WINDOWS)
        .count(store="clicks-per-window", cache=cache)
        .suppress(Suppressed.until_window_closes().with_name("finals"))
        .to_stream()
        .to(finals_topic, value=int)
    )
    return b.build()


def make_clicks(n: int, start_ms: int, step_ms: int = 20, seed: int = 5) -> list[tuple[str, dict[str, Any], int]]:
    """``n`` clicks (page key, value, timestamp), timestamps rising by ``step_ms`` from ``start_ms``."""
    rng = random.Random(seed + start_ms)
    return [(f"page{rng.randrange(20)}", {"user": rng.randrange(100)}, start_ms + i * step_ms) for i in range(n)]


def reference_window_counts(clicks: list[tuple[str, Any, int]]) -> dict[tuple[str, int], int]:
    """Clicks per (page, window start) of ``CLICK_WINDOWS``."""
    counts: Counter[tuple[str, int]] = Counter()
    for page, _, ts in clicks:
        for start in CLICK_WINDOWS.window_starts(ts):
            counts[(page, start)] += 1
    return dict(counts)


def key_counts(input_topic: str, out_topic: str, tag: str = "") -> Topology:
    """A count per key, one output per input (no record cache): the output of a key is exactly 1, 2, 3, ...
    unless a task redid or lost work. ``tag`` names the instance in each output (``{"n": count, "by": tag}``)."""
    b = StreamsBuilder()
    (
        b.stream(input_topic, key=str, value="json")
        .group_by_key()
        .count(store="counts", cache=False)
        .to_stream()
        .map_values(lambda n: {"n": n, "by": tag})
        .to(out_topic, key=str, value="json")
    )
    return b.build()


# The versioned enrichment tests: orders wait 5 s (by stream time) for late price updates; prices keep an hour.
ENRICHMENT_GRACE_MS = 5_000


def versioned_enrichment(orders_topic: str, prices_topic: str, out_topic: str) -> Topology:
    """Orders (keyed by product) joined with the price of their product as of the order's time (KIP-914,
    KIP-923): a versioned price table, and a join grace for price updates that arrive after the order."""
    b = StreamsBuilder()
    prices = b.table(
        prices_topic, key=str, value="json", store=VersionedStoreSpec("prices", history_retention=3_600_000)
    )
    (
        b.stream(orders_topic, key=str, value="json")
        .join(prices, lambda o, p: {**o, "price": p}, grace=ENRICHMENT_GRACE_MS)
        .to(out_topic, key=str, value="json")
    )
    return b.build()


def price_as_of(prices: list[tuple[str, Any, int]], product: str, ts: int) -> Any:
    """The reference: the price of ``product`` at ``ts`` (the last version at or before it; a later record with
    the same timestamp replaces an earlier one), None if none."""
    best: tuple[int, int, Any] | None = None
    for i, (key, value, at) in enumerate(prices):
        if key == product and at <= ts and (best is None or (at, i) > best[:2]):
            best = (at, i, value)
    return None if best is None else best[2]


def key_counts_app(
    input_topic: str, out_topic: str, app_id: str, log_url: str, state_dir: Path, name: str, **options: Any
) -> StreamsApp:
    """Instance ``name`` of a ``key_counts`` application (its state under ``state_dir / name``) with one standby
    replica, committing every 100 ms; ``options`` are further ``StreamsApp`` settings."""
    return StreamsApp(
        key_counts(input_topic, out_topic, name),
        app_id,
        log_url,
        state_dir=state_dir / name,
        commit_interval_ms=100,
        num_standby_replicas=1,
        **options,
    )


@contextmanager
def two_served_instances(
    input_topic: str, out_topic: str, app_id: str, log_url: str, state_dir: Path
) -> Iterator[tuple[StreamsApp, StreamsApp]]:
    """Two running ``key_counts_app`` instances, ``first`` and ``second``, each with a query server."""
    with ExitStack() as stack:
        first, second = (
            stack.enter_context(
                key_counts_app(
                    input_topic,
                    out_topic,
                    app_id,
                    log_url,
                    state_dir,
                    name,
                    session_timeout_ms=4000,
                    application_server=f"http://127.0.0.1:{free_port()}",
                )
            )
            for name in ("first", "second")
        )
        yield first, second
