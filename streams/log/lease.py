"""A lease held through group membership: the member of group ``name`` that owns partition 0 of the
one-partition topic ``name`` holds it (the registry elects its leader the same way).

The group's own session timeout decides when a silent holder loses it; the group's assignment strategy
should be ``cooperative-sticky`` (a joining member then never takes partition 0 from a live holder; with
another strategy the lease stays exclusive but may change hands when members join).
"""

from __future__ import annotations

from streams.log.base import Lease, Log, TopicPartition

__all__ = ["GroupLease"]


class GroupLease(Lease):
    def __init__(self, log: Log, name: str, holder: str) -> None:
        self.name = name
        self.holder = holder
        timeout = log.group_session_timeout
        assert timeout is not None, "a log with group membership has a session timeout"
        self.timeout = timeout
        log.ensure_topic(name, 1)
        self._tp = TopicPartition(name, 0)
        self._held = False
        self._consumer = log.consumer(name, client_id=holder)
        self._consumer.subscribe([name], on_assign=self._assigned, on_revoke=self._revoked)
        self._closed = False

    def _assigned(self, partitions: list[TopicPartition]) -> None:
        if self._tp in partitions:
            self._held = True

    def _revoked(self, partitions: list[TopicPartition]) -> None:
        if self._tp in partitions:
            self._held = False

    def poll(self) -> bool:
        if self._closed:
            return False
        self._consumer.poll(0.0, 1)  # serves the group's callbacks; nobody writes to the topic
        return self._held

    @property
    def held(self) -> bool:
        return self._held and not self._closed

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._held = False
            self._consumer.close()  # leaves the group: another member gets partition 0 at once
