"""The store's reader on a real SQLite log whose connection breaks under it: it says so, refuses writes with
Confluent's 50001 naming the cause, starts over on a new consumer and catches up with what it missed."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from registry.errors import ApiError, ErrorCode
from registry.schemas_topic import Key
from registry.store import Store
from streams.log import open_log
from tests.support.waiting import wait_for_async


def config_record(subject: str, level: str) -> tuple[bytes, bytes]:
    return Key("CONFIG", subject).encode(), f'{{"compatibilityLevel":"{level}"}}'.encode()


def test_the_reader_survives_a_broken_connection(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="registry")

    async def main() -> None:
        log = open_log(f"sqlite:///{tmp_path / 'data'}")
        store = Store(log, "_schemas", timeout=5.0)
        await asyncio.to_thread(store.open)
        store.start(asyncio.get_running_loop())
        try:
            await store.write(*config_record("a", "FULL"), operation="Update config")
            assert store.ready

            # Every query on the reader's connection now fails inside SQLite.
            db = store._reader._consumer._db  # type: ignore[union-attr]
            with db.lock:  # not in the middle of the reader's own query (closing under it can crash SQLite)
                db.conn.close()
            other = log.producer()  # someone else writes while the reader is down
            missed = other.produce("_schemas", *reversed(config_record("b", "NONE")), partition=0).offset
            await wait_for_async(lambda: store.reader_failure is not None, 15, what="the reader to fail")
            assert not store.ready
            with pytest.raises(ApiError) as refused:
                await store.write(*config_record("c", "FORWARD"), operation="Update config")
            assert refused.value.status == 500
            assert refused.value.error_code == ErrorCode.STORE_ERROR
            assert refused.value.message.startswith(
                "Update config operation failed: the store cannot read its log (reading _schemas failed: SQLite log "
            )
            assert "Cannot operate on a closed database" in refused.value.message

            # It starts over on a new consumer from where it was, and catches up.
            await wait_for_async(lambda: store.ready, 15, what="the store to be ready again")
            await wait_for_async(lambda: store.applied.offset >= missed, 15, what="the missed record to be applied")
            assert store.state.configs == {"a": {"compatibilityLevel": "FULL"}, "b": {"compatibilityLevel": "NONE"}}
            await store.write(*config_record("c", "FORWARD"), operation="Update config")
            assert store.state.configs["c"] == {"compatibilityLevel": "FORWARD"}
            other.close()
        finally:
            store.close()
            log.close()

    asyncio.run(main())
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("reading _schemas (attempt 1) failed: SQLite log ") for m in messages), messages
    assert any(m.startswith("reading _schemas with a new consumer from offset ") for m in messages), messages
    assert any(m.startswith("reading _schemas again after ") for m in messages), messages
