"""The DEK registry's operations, with Confluent's rules and error codes (its ``DekRegistry``).

Reads answer from ``DekState``; writes go through the store (the leader's fenced appender where instances
share the log) and return once applied here, one at a time (``_write_lock``), so a version or an existence
check is never decided on a stale view. Answers are built as JSON-ready dicts with the field names of
confluent-kafka's ``Kek`` and ``Dek``; ``deleted`` appears only when true, as Confluent's entities carry it.

Shared KEKs: a DEK created without ``encryptedKeyMaterial`` under a shared KEK gets fresh material from the
registry, wrapped through the KMS; every answer with a DEK of a shared KEK carries the unwrapped
``keyMaterial`` too. Under a KEK that is not shared, the client must send ``encryptedKeyMaterial`` (42271).
"""

from __future__ import annotations

import asyncio
import base64
import unicodedata
from typing import Any

from registry import errors
from registry.dek.kms import Kms, KmsError, generate_key_material, normalize_kms_type
from registry.dek.records import ALGORITHMS, DEFAULT_ALGORITHM, DekKey, KekKey, dek_value, kek_value
from registry.dek.state import Dek, DekState, Kek
from registry.store import LogStore

#: Confluent's ``DekRegistryResource.NAME_MAX_LENGTH``
NAME_MAX_LENGTH = 64
#: the version a DEK gets when the request names none
MIN_VERSION = 1


def check_name(name: str | None) -> str:
    """Confluent's rule for KEK names: a letter or ``_``, then letters, digits, ``_`` or ``-``; at most 64."""
    if (
        not name
        or len(name) > NAME_MAX_LENGTH
        or not (name[0].isalpha() or name[0] == "_")
        or not all(c.isalnum() or c in "_-" for c in name[1:])
    ):
        raise errors.invalid_key("name")
    return name


def check_subject(subject: str | None) -> str:
    if not subject or any(unicodedata.category(c) == "Cc" for c in subject):
        raise errors.invalid_key("subject")
    return subject


def check_algorithm(algorithm: str | None) -> str | None:
    """None (any, or the default where one is needed) or one of Confluent's DEK formats (else 42271)."""
    if algorithm is None or algorithm == "":
        return None
    if algorithm not in ALGORITHMS:
        raise errors.invalid_key("algorithm")
    return algorithm


def kek_answer(kek: Kek) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": kek.name,
        "kmsType": kek.kms_type,
        "kmsKeyId": kek.kms_key_id,
        "kmsProps": kek.kms_props,
    }
    if kek.doc is not None:
        body["doc"] = kek.doc
    body["shared"] = kek.shared
    body["ts"] = kek.ts
    if kek.deleted:
        body["deleted"] = True
    return body


class DekService:
    def __init__(self, store: LogStore[DekState], kms: Kms) -> None:
        self.store = store
        self.kms = kms
        self._write_lock = asyncio.Lock()
        # Until the first write another instance may have written since we read the log (as ``Service``).
        self._needs_barrier = True

    @property
    def state(self) -> DekState:
        return self.store.state

    # ---- answers ----------------------------------------------------------------------------------------

    def dek_answer(self, dek: Dek) -> dict[str, Any]:
        """A DEK as confluent-kafka's ``Dek``: with ``keyMaterial`` when its KEK is shared (50070 when the KMS
        cannot unwrap it)."""
        body: dict[str, Any] = {
            "kekName": dek.kek_name,
            "subject": dek.subject,
            "version": dek.version,
            "algorithm": dek.algorithm,
            "encryptedKeyMaterial": dek.encrypted_key_material,
        }
        kek = self.state.kek(dek.kek_name, deleted=True)
        if kek is not None and kek.shared:
            try:
                raw = self.kms.unwrap(kek, dek.encrypted_key_material)
            except KmsError as e:
                raise errors.dek_generation_failed(f"Could not generate raw dek for {dek.subject}: {e}") from e
            body["keyMaterial"] = base64.b64encode(raw).decode()
        body["ts"] = dek.ts
        if dek.deleted:
            body["deleted"] = True
        return body

    # ---- KEK reads --------------------------------------------------------------------------------------

    def kek_names(self, subject_prefixes: list[str], *, deleted: bool) -> list[str]:
        """The KEK names, sorted; with ``subject_prefixes``, those with a DEK of a subject starting with one."""
        if not subject_prefixes:
            return sorted(k.name for k in self.state.keks.values() if deleted or not k.deleted)
        return sorted(
            {
                d.kek_name
                for d in self.state.all_deks(deleted=deleted)
                if any(d.subject.startswith(p) for p in subject_prefixes)
            }
        )

    def kek(self, name: str, *, deleted: bool) -> Kek:
        kek = self.state.kek(check_name(name), deleted=deleted)
        if kek is None:
            raise errors.key_not_found(name)
        return kek

    # ---- KEK writes -------------------------------------------------------------------------------------

    async def create_kek(
        self,
        name: str | None,
        kms_type: str | None,
        kms_key_id: str | None,
        kms_props: dict[str, str],
        doc: str | None,
        shared: bool,
        deleted: bool,
    ) -> Kek:
        """Create a KEK; creating a soft-deleted one again with the same content undeletes it (Confluent)."""
        name = check_name(name)
        if not kms_key_id:
            raise errors.invalid_key("kmsKeyId")
        if kms_type is None:
            raise errors.invalid_key("kmsType")
        kms_type = normalize_kms_type(kms_type)
        async with self._writing():
            new = Kek(name, kms_type, kms_key_id, dict(sorted(kms_props.items())), doc, shared, deleted, 0)
            old = self.state.keks.get(name)
            if old is not None and (old.deleted == deleted or not old.same_content(new)):
                raise errors.key_already_exists(name)
            await self._put_kek(new, "Create key")
            return self.state.keks[name]

    async def update_kek(
        self, name: str, kms_props: dict[str, str] | None, doc: str | None, shared: bool | None, fields: set[str]
    ) -> Kek:
        """Change a live KEK's ``kmsProps``, ``doc`` or ``shared``: those in ``fields`` (sent), the rest kept."""
        name = check_name(name)
        async with self._writing():
            old = self.state.kek(name)
            if old is None:
                raise errors.key_not_found(name)
            new = Kek(
                name,
                old.kms_type,
                old.kms_key_id,
                dict(sorted((kms_props or {}).items())) if "kmsProps" in fields else old.kms_props,
                doc if "doc" in fields else old.doc,
                shared if "shared" in fields and shared is not None else old.shared,
                False,
                0,
            )
            if new.same_content(old):
                return old
            await self._put_kek(new, "Update key")
            return self.state.keks[name]

    async def delete_kek(self, name: str, *, permanent: bool) -> None:
        """Soft delete, or (``permanent``, once soft-deleted) remove; refused (42272) while DEKs remain under it
        (live ones for a soft delete, any for a permanent one)."""
        name = check_name(name)
        async with self._writing():
            kek = self.state.kek(name, deleted=True)
            if kek is None:
                raise errors.key_not_found(name)
            if self.state.deks_of(name, deleted=permanent):
                raise errors.key_reference_exists(name)
            if permanent:
                if not kek.deleted:
                    raise errors.key_not_soft_deleted(name)
                for raw in self.state.kek_key_raws(name):
                    await self.store.write(raw, None, "Delete key")
            elif not kek.deleted:
                await self._put_kek(_with_deleted(kek, True), "Delete key")

    async def undelete_kek(self, name: str) -> None:
        name = check_name(name)
        async with self._writing():
            kek = self.state.kek(name, deleted=True)
            if kek is None:
                raise errors.key_not_found(name)
            if kek.deleted:
                await self._put_kek(_with_deleted(kek, False), "Undelete key")

    # ---- DEK reads --------------------------------------------------------------------------------------

    def dek_subjects(self, kek_name: str, *, deleted: bool) -> list[str]:
        self.kek(kek_name, deleted=deleted)
        return sorted({d.subject for d in self.state.deks_of(kek_name, deleted=deleted)})

    def dek_versions(self, kek_name: str, subject: str, algorithm: str | None, *, deleted: bool) -> list[int]:
        self.kek(kek_name, deleted=deleted)
        alg = check_algorithm(algorithm) or DEFAULT_ALGORITHM
        return [d.version for d in self.state.deks_of(kek_name, check_subject(subject), alg, deleted=deleted)]

    def dek(self, kek_name: str, subject: str, version: int | None, algorithm: str | None, *, deleted: bool) -> Dek:
        """Version ``version`` of the subject's DEK, or the latest when None (40470 for a missing KEK or DEK)."""
        self.kek(kek_name, deleted=deleted)
        subject = check_subject(subject)
        alg = check_algorithm(algorithm) or DEFAULT_ALGORITHM
        if version is None:
            dek = self.state.latest_dek(kek_name, subject, alg, deleted=deleted)
        else:
            dek = self.state.dek(kek_name, subject, alg, version, deleted=deleted)
        if dek is None:
            raise errors.key_not_found(subject)
        return dek

    # ---- DEK writes -------------------------------------------------------------------------------------

    async def create_dek(
        self,
        kek_name: str,
        subject: str | None,
        version: int | None,
        algorithm: str | None,
        encrypted_key_material: str | None,
        deleted: bool,
    ) -> Dek:
        """Create a DEK version (1 when not given). Under a shared KEK without ``encryptedKeyMaterial`` the
        registry generates and wraps the material; creating a soft-deleted version again with the same
        content undeletes it (Confluent)."""
        check_name(kek_name)
        subject = check_subject(subject)
        alg = check_algorithm(algorithm) or DEFAULT_ALGORITHM
        version = MIN_VERSION if version is None else version
        if version < MIN_VERSION:
            raise errors.invalid_key("version")
        async with self._writing():
            kek = self.state.kek(kek_name, deleted=deleted)
            if kek is None:
                raise errors.key_not_found(kek_name)
            key = DekKey(kek_name, subject, alg, version)
            old = self.state.dek(kek_name, subject, alg, version, deleted=True)
            if old is not None and (
                old.deleted == deleted
                or encrypted_key_material is None
                or old.encrypted_key_material != encrypted_key_material
            ):
                raise errors.key_already_exists(subject)
            if encrypted_key_material is None:
                if not kek.shared:
                    raise errors.invalid_key("encryptedKeyMaterial")
                try:
                    encrypted_key_material = await asyncio.to_thread(self.kms.wrap, kek, generate_key_material(alg))
                except KmsError as e:
                    raise errors.dek_generation_failed(f"Could not generate encrypted dek for {subject}: {e}") from e
            else:
                try:
                    base64.b64decode(encrypted_key_material, validate=True)
                except ValueError:
                    raise errors.invalid_key("encryptedKeyMaterial") from None
            value = dek_value(key, encrypted_key_material=encrypted_key_material, deleted=deleted)
            await self.store.write(key.encode(), value, "Create key")
            created = self.state.dek(kek_name, subject, alg, version, deleted=True)
            assert created is not None
            return created

    async def delete_deks(
        self, kek_name: str, subject: str, version: int | None, algorithm: str | None, *, permanent: bool
    ) -> None:
        """Soft delete (or, once soft-deleted, remove with ``permanent``) one version, or every version of the
        subject's DEKs when ``version`` is None; 40470 when there is none, 40471 for a live one."""
        check_name(kek_name)
        subject = check_subject(subject)
        alg = check_algorithm(algorithm) or DEFAULT_ALGORITHM
        async with self._writing():
            if self.state.kek(kek_name, deleted=True) is None:
                raise errors.key_not_found(kek_name)
            targets = self._targets(kek_name, subject, version, alg)
            if permanent:
                if any(not d.deleted for d in targets):
                    raise errors.key_not_soft_deleted(subject)
                for dek in targets:
                    for raw in DekState.dek_key_raws(dek):
                        await self.store.write(raw, None, "Delete key")
            else:
                for dek in targets:
                    if not dek.deleted:
                        await self._put_dek(dek, deleted=True, operation="Delete key")

    async def undelete_deks(self, kek_name: str, subject: str, version: int | None, algorithm: str | None) -> None:
        """Undelete one version, or every version of the subject's DEKs; 40472 while the KEK is soft-deleted."""
        check_name(kek_name)
        subject = check_subject(subject)
        alg = check_algorithm(algorithm) or DEFAULT_ALGORITHM
        async with self._writing():
            kek = self.state.kek(kek_name, deleted=True)
            if kek is None:
                raise errors.key_not_found(kek_name)
            targets = self._targets(kek_name, subject, version, alg)
            if kek.deleted:
                raise errors.key_soft_deleted(kek_name)
            for dek in targets:
                if dek.deleted:
                    await self._put_dek(dek, deleted=False, operation="Undelete key")

    def _targets(self, kek_name: str, subject: str, version: int | None, algorithm: str) -> list[Dek]:
        """The DEKs a delete or undelete acts on (soft-deleted ones included): one version, or all of the
        subject's under ``algorithm``; 40470 when there is none."""
        if version is None:
            found = self.state.deks_of(kek_name, subject, algorithm, deleted=True)
        else:
            one = self.state.dek(kek_name, subject, algorithm, version, deleted=True)
            found = [one] if one is not None else []
        if not found:
            raise errors.key_not_found(subject)
        return found

    # ---- writing ----------------------------------------------------------------------------------------

    def _writing(self) -> _WriteSection:
        return _WriteSection(self)

    async def _put_kek(self, kek: Kek, operation: str) -> None:
        value = kek_value(
            name=kek.name,
            kms_type=kek.kms_type,
            kms_key_id=kek.kms_key_id,
            kms_props=kek.kms_props,
            doc=kek.doc,
            shared=kek.shared,
            deleted=kek.deleted,
        )
        await self.store.write(KekKey(kek.name).encode(), value, operation)

    async def _put_dek(self, dek: Dek, *, deleted: bool, operation: str) -> None:
        value = dek_value(dek.key, encrypted_key_material=dek.encrypted_key_material, deleted=deleted)
        await self.store.write(dek.key.encode(), value, operation)


class _WriteSection:
    """One write at a time, on a state that has caught up with the log at least once (a barrier)."""

    def __init__(self, service: DekService) -> None:
        self.service = service

    async def __aenter__(self) -> None:
        await self.service._write_lock.acquire()
        try:
            if self.service._needs_barrier:
                await self.service.store.barrier()
                self.service._needs_barrier = False
        except BaseException:
            self.service._write_lock.release()
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.service._write_lock.release()


def _with_deleted(kek: Kek, deleted: bool) -> Kek:
    return Kek(kek.name, kek.kms_type, kek.kms_key_id, kek.kms_props, kek.doc, kek.shared, deleted, kek.ts)
