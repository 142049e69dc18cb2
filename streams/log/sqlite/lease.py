"""``SqliteLease`` (``Log.lease`` on SQLite): a row per name holding the holder and the wall-clock time its lease
expires (the processes share one machine, so they share the clock). The holder renews it every quarter of the
timeout; anyone takes a row that expired or was released.
"""

from __future__ import annotations

import time
import uuid

from streams.log.base import Lease
from streams.log.sqlite.connection import OwningLog, translated

__all__ = ["SqliteLease"]


class SqliteLease(Lease):
    """A row in ``leases``. Each lease object has its own token, so two objects of one holder name (a
    restarted process) never mistake each other's lease for their own."""

    def __init__(self, log: OwningLog, name: str, holder: str, timeout: float) -> None:
        if not name:
            raise ValueError("a lease needs a name")
        if timeout <= 0:
            raise ValueError(f"lease timeout must be > 0 seconds, got {timeout!r}")
        self.name = name
        self.holder = holder
        self.timeout = timeout
        self._token = f"{holder}#{uuid.uuid4().hex[:12]}"
        self._db = log.connect_client()
        self._expires = 0.0  # wall-clock seconds until which this object holds the lease
        self._renew_at = 0.0
        self._closed = False

    @property
    def held(self) -> bool:
        return not self._closed and time.time() < self._expires

    @translated
    def poll(self) -> bool:
        if self._closed:
            return False
        now = time.time()
        if now < self._renew_at and now < self._expires:
            return True
        now_ms = int(now * 1000)
        with self._db.lock:
            row = self._db.conn.execute("SELECT holder, expires_ms FROM leases WHERE name = ?", (self.name,)).fetchone()
        if row is not None and row[0] != self._token and row[1] > now_ms:
            self._expires = 0.0
            return False  # someone else holds it: no write, so waiting members cost no fsync
        with self._db.write() as conn:
            row = conn.execute("SELECT holder, expires_ms FROM leases WHERE name = ?", (self.name,)).fetchone()
            if row is not None and row[0] != self._token and row[1] > now_ms:
                self._expires = 0.0
                return False
            conn.execute(
                "INSERT INTO leases (name, holder, expires_ms) VALUES (?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_ms = excluded.expires_ms",
                (self.name, self._token, now_ms + int(self.timeout * 1000)),
            )
        self._expires = now + self.timeout
        self._renew_at = now + self.timeout / 4
        return True

    @translated
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            with self._db.write() as conn:
                conn.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (self.name, self._token))
        finally:
            self._expires = 0.0
            self._db.close()
