"""Output records a task replays without: the ones its production exception handler chose to drop after the
log refused them late (a delivery that failed after the send, e.g. a record above the topic's
``max.message.bytes``).

Such a failure leaves the task's transaction unable to commit, so the task is rolled back to its last
commit and replays from the committed offsets; the replay meets the same outputs again and must leave out
exactly the dropped ones. An output is recognised by a digest of its topic, key and value, which does not
depend on where the commit interval cut the input; each entry drops one occurrence, so an identical record
produced later goes to the log (and its handler) again. An entry is used up only when the transaction that
left the output out commits its input offsets: a replay that fails again (the log refused another output)
gives its entries back, so the next replay leaves out the old and the new ones and the handler is asked
about each refused output once.
"""

from __future__ import annotations

import hashlib

__all__ = ["OutputSkips"]


def _digest(topic: str, key: bytes | None, value: bytes | None) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for part in (topic.encode(), key, value):
        if part is None:
            h.update(b"\xff")
        else:
            h.update(len(part).to_bytes(8, "big"))
            h.update(part)
    return h.digest()


class OutputSkips:
    """The outputs one task is to drop on its replay; kept by the task manager across the task's restarts."""

    def __init__(self) -> None:
        self._pending: dict[bytes, int] = {}
        self._taken: list[bytes] = []  # left out since the task's last offset commit
        self.futile_replays = 0  # replays in a row that met none of the outputs they were to leave out

    def __bool__(self) -> bool:
        return bool(self._pending)

    def __len__(self) -> int:
        return sum(self._pending.values())

    def add(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        d = _digest(topic, key, value)
        self._pending[d] = self._pending.get(d, 0) + 1

    def take(self, topic: str, key: bytes | None, value: bytes | None) -> bool:
        """Whether this output is one to drop; dropping it uses the entry up."""
        if not self._pending:
            return False  # the replay has left out all it was to: no digest per output for the task's life
        d = _digest(topic, key, value)
        left = self._pending.get(d)
        if left is None:
            return False
        if left == 1:
            del self._pending[d]
        else:
            self._pending[d] = left - 1
        self._taken.append(d)
        return True

    def committed(self) -> None:
        """The task committed its input offsets: what it left out since is dropped for good."""
        self._taken.clear()
        self.futile_replays = 0

    def rolled_back(self) -> None:
        """The task goes back to its last commit: the outputs it left out since will be met again. A replay
        that had outputs to leave out and met none of them before failing again did not reproduce them."""
        self.futile_replays = self.futile_replays + 1 if self._pending and not self._taken else 0
        for d in self._taken:
            self._pending[d] = self._pending.get(d, 0) + 1
        self._taken.clear()
