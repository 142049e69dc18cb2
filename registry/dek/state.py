"""The DEK registry's state: the KEKs and DEKs, a pure function of ``_dek_registry_keys``.

``DekState.apply`` is the only mutator; like ``registry.state.State`` it runs on the event-loop thread once
the server serves (``registry.store.LogStore`` hands records over), so reads need no lock.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from registry.dek.records import DekKey, KekKey, decode_key
from registry.schemas_topic import RecordFormatError, decode_value

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Kek:
    name: str
    kms_type: str
    kms_key_id: str
    kms_props: dict[str, str]
    doc: str | None
    shared: bool
    deleted: bool
    ts: int  # when it was last written (the record's timestamp, ms)
    key_raws: set[bytes] = field(default_factory=set)  # the key bytes it was written with, for tombstones

    def same_content(self, other: Kek) -> bool:
        """Confluent's ``isEquivalent``: everything but ``deleted`` and the timestamp."""
        return (self.kms_type, self.kms_key_id, self.kms_props, self.doc, self.shared) == (
            other.kms_type,
            other.kms_key_id,
            other.kms_props,
            other.doc,
            other.shared,
        )


@dataclass(slots=True)
class Dek:
    kek_name: str
    subject: str
    algorithm: str
    version: int
    encrypted_key_material: str
    deleted: bool
    ts: int
    key_raws: set[bytes] = field(default_factory=set)

    @property
    def key(self) -> DekKey:
        return DekKey(self.kek_name, self.subject, self.algorithm, self.version)


#: (KEK name, subject, algorithm): the DEKs of one subject under one KEK, by version
DekSeries = tuple[str, str, str]


@dataclass(slots=True)
class DekState:
    keks: dict[str, Kek] = field(default_factory=dict)
    deks: dict[DekSeries, dict[int, Dek]] = field(default_factory=dict)
    offset: int = -1  # last applied offset
    generation: int = 0  # bumped by every change

    def apply(self, offset: int, key_raw: bytes | None, value_raw: bytes | None, timestamp: int) -> None:
        self.offset = offset
        if key_raw is None:
            return
        try:
            key = decode_key(key_raw)
            if key is None:
                return
            value = decode_value(value_raw)
            self._apply(key, value, timestamp)
        except (RecordFormatError, KeyError, TypeError, ValueError) as e:
            log.warning("skipping _dek_registry_keys record at offset %d: %s", offset, e)

    def _apply(self, key: KekKey | DekKey, value: dict[str, Any] | None, timestamp: int) -> None:
        self.generation += 1
        if isinstance(key, KekKey):
            if value is None:
                self.keks.pop(key.name, None)
                return
            old = self.keks.get(key.name)
            raws = old.key_raws if old is not None else set()
            raws.add(key.raw)
            props = value.get("kmsProps") or {}
            self.keks[key.name] = Kek(
                name=key.name,
                kms_type=str(value["kmsType"]),
                kms_key_id=str(value["kmsKeyId"]),
                kms_props={str(k): str(v) for k, v in dict(props).items()},
                doc=value.get("doc"),
                shared=bool(value.get("shared", False)),
                deleted=bool(value.get("deleted", False)),
                ts=timestamp,
                key_raws=raws,
            )
            return
        series = (key.kek_name, key.subject, key.algorithm)
        versions = self.deks.get(series)
        if value is None:
            if versions is not None:
                versions.pop(key.version, None)
                if not versions:
                    del self.deks[series]
            return
        versions = self.deks.setdefault(series, {})
        old_dek = versions.get(key.version)
        dek_raws = old_dek.key_raws if old_dek is not None else set()
        dek_raws.add(key.raw)
        versions[key.version] = Dek(
            kek_name=key.kek_name,
            subject=key.subject,
            algorithm=key.algorithm,
            version=key.version,
            encrypted_key_material=str(value["encryptedKeyMaterial"]),
            deleted=bool(value.get("deleted", False)),
            ts=timestamp,
            key_raws=dek_raws,
        )

    # ---- queries ----------------------------------------------------------------------------------------

    def key_counts(self) -> dict[tuple[str, bool], int]:
        """How many KEKs and DEKs there are, by (``KEK``/``DEK``, soft-deleted): what ``/metrics`` reports."""
        counts = {(kind, deleted): 0 for kind in ("KEK", "DEK") for deleted in (False, True)}
        for kek in self.keks.values():
            counts[("KEK", kek.deleted)] += 1
        for versions in self.deks.values():
            for dek in versions.values():
                counts[("DEK", dek.deleted)] += 1
        return counts

    def summary(self) -> str:
        return f"{len(self.keks)} KEKs, {sum(len(v) for v in self.deks.values())} DEKs"

    def kek(self, name: str, *, deleted: bool = False) -> Kek | None:
        kek = self.keks.get(name)
        return kek if kek is not None and (deleted or not kek.deleted) else None

    def deks_of(
        self, kek_name: str, subject: str | None = None, algorithm: str | None = None, *, deleted: bool = False
    ) -> list[Dek]:
        """The DEKs under ``kek_name`` (of ``subject`` and ``algorithm`` when given), by subject, algorithm and
        version; soft-deleted ones only with ``deleted``."""
        if subject is not None and algorithm is not None:  # one series: a lookup, not a scan (the hot path)
            series = [self.deks.get((kek_name, subject, algorithm), {})]
        else:
            series = [
                versions
                for (kek, subj, alg), versions in sorted(self.deks.items())
                if kek == kek_name and (subject is None or subj == subject) and (algorithm is None or alg == algorithm)
            ]
        return [dek for versions in series for _, dek in sorted(versions.items()) if deleted or not dek.deleted]

    def dek(self, kek_name: str, subject: str, algorithm: str, version: int, *, deleted: bool = False) -> Dek | None:
        dek = self.deks.get((kek_name, subject, algorithm), {}).get(version)
        return dek if dek is not None and (deleted or not dek.deleted) else None

    def latest_dek(self, kek_name: str, subject: str, algorithm: str, *, deleted: bool = False) -> Dek | None:
        live = self.deks_of(kek_name, subject, algorithm, deleted=deleted)
        return live[-1] if live else None

    def all_deks(self, *, deleted: bool = False) -> list[Dek]:
        return [
            dek
            for _, versions in sorted(self.deks.items())
            for _, dek in sorted(versions.items())
            if deleted or not dek.deleted
        ]

    def kek_key_raws(self, name: str) -> set[bytes]:
        """Every byte form of the KEK's key seen in the log, plus today's: what its tombstone must cover."""
        kek = self.keks.get(name)
        return (set(kek.key_raws) if kek is not None else set()) | {KekKey(name).encode()}

    @staticmethod
    def dek_key_raws(dek: Dek) -> set[bytes]:
        return set(dek.key_raws) | {dek.key.encode()}
