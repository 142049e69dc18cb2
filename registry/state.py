"""The registry's state: a pure function of the ``_schemas`` log, rebuilt by applying records in order.

``State.apply`` is the only mutator. Once the server serves, it runs on the event-loop thread (the log
reader hands records over), so reads never see a half-applied record and need no lock; before that, the
startup replay (``Store.open``) applies the log up to its end.
"""

from __future__ import annotations

import base64
import binascii
import logging
from dataclasses import dataclass, field
from typing import Any

from registry import contexts, schemas_topic
from registry.contracts import content_digest, guid_of
from registry.schema_types.base import Reference
from registry.schemas_topic import Key, RecordFormatError, decode_key, decode_value

log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class SchemaContent:
    """What an id names: type, canonical text, references, metadata and rule set."""

    schema_type: str
    schema: str
    references: tuple[Reference, ...]
    metadata: dict[str, Any] | None
    rule_set: dict[str, Any] | None
    digest: bytes = b""
    rendered: bytes | None = None  # GET /schemas/ids/{id} body (default format), rendered on the first read

    def __post_init__(self) -> None:
        if not self.digest:
            self.digest = content_digest(self.schema, self.references, self.metadata, self.rule_set)

    @property
    def guid(self) -> str:
        """Confluent 8's GUID: the identity hash as a UUID (the same content has the same GUID everywhere)."""
        return guid_of(self.digest)

    def references_json(self) -> list[dict[str, Any]]:
        return [{"name": r.name, "subject": r.subject, "version": r.version} for r in self.references]


def _stored_md5(value: dict[str, Any]) -> bytes:
    """The identity hash a SCHEMA value carries (Confluent writes ``md5`` when it encrypts metadata, whose hash
    can then not be recomputed); empty when it carries none."""
    md5 = value.get("md5")
    if not isinstance(md5, str):
        return b""
    try:
        raw = base64.b64decode(md5, validate=True)
    except (binascii.Error, ValueError):
        return b""
    return raw if len(raw) == 16 else b""


@dataclass(slots=True, eq=False)
class Version:
    subject: str
    version: int
    id: int
    content: SchemaContent
    deleted: bool
    timestamp: int
    #: every key byte form this subject-version was written with (almost always one: a tuple, not a set, which
    #: costs ~200 bytes more per version)
    key_raws: tuple[bytes, ...] = ()
    rendered: bytes | None = None  # GET /subjects/{s}/versions/{v} body (default format)

    @property
    def ref_key(self) -> tuple[str, int]:
        return (self.subject, self.version)


@dataclass(slots=True)
class IdSpace:
    """The schema ids of one context (each context numbers its schemas on its own, from 1)."""

    contents: dict[int, SchemaContent] = field(default_factory=dict)  # every id ever seen
    #: id -> its live-or-soft versions (subject, version), in the order they were written; a tuple, since an id
    #: is almost always in one or a few subjects (a set costs ~200 bytes more per id)
    id_versions: dict[int, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    digest_to_id: dict[bytes, int] = field(default_factory=dict)
    max_id: int = 0


@dataclass(slots=True)
class State:
    #: normalized qualified subject (``registry/contexts.py``) -> version number -> version
    subjects: dict[str, dict[int, Version]] = field(default_factory=dict)
    #: context -> its ids; the default context ``.`` is always there
    spaces: dict[str, IdSpace] = field(default_factory=lambda: {contexts.DEFAULT_CONTEXT: IdSpace()})
    #: contexts announced by CONTEXT records (what ``GET /contexts`` lists besides ``.``), with their key bytes
    contexts: dict[str, set[bytes]] = field(default_factory=dict)
    #: (subject, version) -> the (subject, version)s whose schema references it (referenced subjects qualified)
    referrers: dict[tuple[str, int], set[tuple[str, int]]] = field(default_factory=dict)
    configs: dict[str | None, dict[str, Any]] = field(default_factory=dict)
    modes: dict[str | None, str] = field(default_factory=dict)
    #: raw key bytes of CONFIG/MODE records, by (keytype, subject), for exact tombstones
    key_raws: dict[tuple[str, str | None], set[bytes]] = field(default_factory=dict)
    #: schema exporters by name: their definitions (EXPORTER records) and states (EXPORTER_STATE records), as
    #: stored (``registry/exporters/records.py`` reads them)
    exporters: dict[str, dict[str, Any]] = field(default_factory=dict)
    exporter_states: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: topic-subject associations (ASSOCIATION records) by (resource type, resource id, association type), as
    #: stored (``registry/associations.py`` reads them)
    associations: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    offset: int = -1  # last applied offset
    generation: int = 0  # bumped by every change; caches of derived views are keyed on it
    _views: dict[tuple[str, bool], list[Version]] = field(default_factory=dict)
    _views_generation: int = -1

    def space(self, context: str) -> IdSpace:
        """The id space of ``context`` (empty if nothing was registered there)."""
        return self.spaces.get(context) or IdSpace()

    def space_of(self, subject: str) -> IdSpace:
        return self.space(contexts.context_of(subject))

    # The default context's ids, by their names of before contexts.
    @property
    def contents(self) -> dict[int, SchemaContent]:
        return self.spaces[contexts.DEFAULT_CONTEXT].contents

    @property
    def id_versions(self) -> dict[int, tuple[tuple[str, int], ...]]:
        return self.spaces[contexts.DEFAULT_CONTEXT].id_versions

    @property
    def digest_to_id(self) -> dict[bytes, int]:
        return self.spaces[contexts.DEFAULT_CONTEXT].digest_to_id

    @property
    def max_id(self) -> int:
        return self.spaces[contexts.DEFAULT_CONTEXT].max_id

    # ---- applying records -------------------------------------------------------------------------------

    def apply(self, offset: int, key_raw: bytes | None, value_raw: bytes | None, timestamp: int) -> None:
        self.offset = offset
        if key_raw is None:
            return
        try:
            key = decode_key(key_raw)
            value = decode_value(value_raw)
        except RecordFormatError as e:
            log.warning("skipping _schemas record at offset %d: %s", offset, e)
            return
        try:
            self._apply(key, value, timestamp)
        except (KeyError, TypeError, ValueError) as e:
            log.warning("skipping malformed %s record at offset %d: %s", key.keytype, offset, e)

    def _apply(self, key: Key, value: dict[str, Any] | None, timestamp: int) -> None:
        kt = key.keytype
        if kt == schemas_topic.NOOP:
            return
        if kt == schemas_topic.EXPORTER_STATE:  # progress: no cached answer shows it, so caches are kept
            if value is None:
                self.exporter_states.pop(key.name or "", None)
            else:
                self.exporter_states[key.name or ""] = value
            return
        self.generation += 1
        if kt == schemas_topic.CONTEXT:
            if key.context is None or key.context == contexts.DEFAULT_CONTEXT:
                return
            if value is None:
                self.contexts.pop(key.context, None)
            else:
                self.contexts.setdefault(key.context, set()).add(key.raw)
        elif kt == schemas_topic.SCHEMA:
            if value is None:
                self._tombstone_version(key)
            else:
                self._put_version(key, value, timestamp)
        elif kt == schemas_topic.CONFIG:
            self.key_raws.setdefault((kt, key.subject), set()).add(key.raw)
            if value is None:
                self.configs.pop(key.subject, None)
            else:
                self.configs[key.subject] = {k: v for k, v in value.items() if k in schemas_topic.CONFIG_FIELDS}
        elif kt == schemas_topic.MODE:
            self.key_raws.setdefault((kt, key.subject), set()).add(key.raw)
            if value is None:
                self.modes.pop(key.subject, None)
            else:
                self.modes[key.subject] = str(value["mode"])
        elif kt == schemas_topic.DELETE_SUBJECT:
            if value is not None:
                upto = int(value["version"])
                for v in self.subjects.get(key.subject or "", {}).values():
                    if v.version <= upto and not v.deleted:
                        v.deleted = True
                        v.rendered = None
        elif kt == schemas_topic.EXPORTER:
            if value is None:
                self.exporters.pop(key.name or "", None)
            else:
                self.exporters[key.name or ""] = value
        elif kt == schemas_topic.ASSOCIATION:
            where = (key.resource_type or "", key.name or "", key.association_type or "")
            if value is None:
                self.associations.pop(where, None)
            else:
                self.associations[where] = value
        elif kt == schemas_topic.CLEAR_SUBJECT and value is not None and key.subject is not None:
            for v in [v for v in self.subjects.get(key.subject, {}).values() if v.deleted]:
                self._remove_version(v)

    def _put_version(self, key: Key, value: dict[str, Any], timestamp: int) -> None:
        subject = key.subject or ""
        schema_id = int(value["id"])
        refs = tuple(
            Reference(str(r["name"]), str(r["subject"]), int(r["version"])) for r in value.get("references") or ()
        )
        content = SchemaContent(
            schema_type=value.get("schemaType") or "AVRO",
            schema=str(value["schema"]),
            references=refs,
            metadata=value.get("metadata") or None,
            rule_set=value.get("ruleSet") or None,
            digest=_stored_md5(value),
        )
        space = self.spaces.get(contexts.context_of(subject))
        if space is None:
            space = self.spaces[contexts.context_of(subject)] = IdSpace()
        owner = space.contents.get(schema_id)
        if owner is not None and (owner.digest != content.digest or owner.schema_type != content.schema_type):
            # Confluent's rule: an id never names two schemas. Every replica ignores such a record.
            log.warning(
                "ignoring SCHEMA record %s/%d: id %d already names a different schema",
                subject,
                key.version,
                schema_id,
            )
            return
        if owner is not None:
            content = owner
        else:
            space.contents[schema_id] = content
        space.digest_to_id.setdefault(content.digest, schema_id)
        space.max_id = max(space.max_id, schema_id)

        versions = self.subjects.setdefault(subject, {})
        version_no = int(key.version or value["version"])
        old = versions.get(version_no)
        raws: tuple[bytes, ...] = ()
        if old is not None:
            raws = old.key_raws
            self._unindex(old)
        if key.raw not in raws:
            raws += (key.raw,)
        v = Version(subject, version_no, schema_id, content, bool(value.get("deleted", False)), timestamp, raws)
        versions[version_no] = v
        ref_key = v.ref_key
        pairs = space.id_versions.get(schema_id, ())
        if ref_key not in pairs:
            space.id_versions[schema_id] = (*pairs, ref_key)
        for r in refs:
            self.referrers.setdefault(_referenced(subject, r), set()).add(v.ref_key)

    def _tombstone_version(self, key: Key) -> None:
        v = self.subjects.get(key.subject or "", {}).get(key.version or 0)
        if v is not None:
            self._remove_version(v)

    def _remove_version(self, v: Version) -> None:
        versions = self.subjects.get(v.subject)
        if versions is None:
            return
        versions.pop(v.version, None)
        if not versions:
            del self.subjects[v.subject]
        self._unindex(v)

    def _unindex(self, v: Version) -> None:
        id_versions = self.space_of(v.subject).id_versions
        ids = id_versions.get(v.id)
        if ids is not None:
            left = tuple(pair for pair in ids if pair != v.ref_key)
            if left:
                id_versions[v.id] = left
            else:
                del id_versions[v.id]
        for r in v.content.references:
            target = _referenced(v.subject, r)
            refs = self.referrers.get(target)
            if refs is not None:
                refs.discard(v.ref_key)
                if not refs:
                    del self.referrers[target]

    # ---- queries ----------------------------------------------------------------------------------------

    def summary(self) -> str:
        return f"{len(self.subjects)} subjects, {len(self.contents)} schema ids, max id {self.max_id}"

    def versions(self, subject: str, *, deleted: bool = False) -> list[Version]:
        """The subject's versions in ascending order; soft-deleted ones only with ``deleted``.

        Cached until the next change (reads like ``versions/latest`` are the hot path); callers must not
        mutate the returned list."""
        if self._views_generation != self.generation:
            self._views.clear()
            self._views_generation = self.generation
        key = (subject, deleted)
        view = self._views.get(key)
        if view is None:
            vs = self.subjects.get(subject)
            if not vs:
                return []  # not kept: subjects that do not exist come from requests, without bound
            view = [vs[n] for n in sorted(vs) if deleted or not vs[n].deleted]
            if len(self._views) < 100_000:
                self._views[key] = view
        return view

    def latest(self, subject: str, *, deleted: bool = False) -> Version | None:
        vs = self.versions(subject, deleted=deleted)
        return vs[-1] if vs else None

    def next_version(self, subject: str) -> int:
        vs = self.subjects.get(subject)
        return max(vs) + 1 if vs else 1

    def raw_keys(self, key: Key) -> set[bytes]:
        """Every byte form of ``key`` seen in the log, plus today's form: what a tombstone must cover."""
        if key.keytype == schemas_topic.SCHEMA:
            v = self.subjects.get(key.subject or "", {}).get(key.version or 0)
            found = set(v.key_raws) if v is not None else set()
        elif key.keytype == schemas_topic.CONTEXT:
            found = set(self.contexts.get(key.context or "", ()))
        else:
            found = set(self.key_raws.get((key.keytype, key.subject), ()))
        found.add(key.encode())
        return found


def _referenced(subject: str, r: Reference) -> tuple[str, int]:
    """The (subject, version) a reference of ``subject``'s schema points at, in ``subject``'s context."""
    return (contexts.qualify_reference(subject, r.subject), r.version)
