"""The registry's operations with Confluent's semantics: what each endpoint does, independent of HTTP.

Reads look at ``State`` directly. Writes validate, then (under one lock, as the leader) compute ids and
versions from the caught-up state, write records through the ``Store`` and return once applied. Two parts
the operations share live beside the service: turning a request's schema into a parsed one
(``schema_parser.py``: ``service.parser``) and the config and mode in force (``settings.py``:
``service.settings``); so do the compatibility rules, which are ``schema_types/compatibility.py``'s.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from dataclasses import dataclass
from typing import Any, Protocol

from compat import CompatibilityLevel, CompatibilityPolicy
from registry import contexts, contracts, errors, schemas_topic
from registry.associations import Associations
from registry.config import DEFAULTS
from registry.contracts import content_digest
from registry.limits import Limits
from registry.modes import IMPORT_MODES, READ_ONLY_MODES, Mode
from registry.references import LATEST
from registry.schema_parser import SchemaParser, SchemaRequest, is_empty_schema
from registry.schema_types import InvalidSchemaError, ParsedSchema
from registry.schema_types.compatibility import check_compatibility, compatibility_messages
from registry.schemas_topic import Key
from registry.settings import Settings
from registry.state import IdSpace, SchemaContent, State, Version
from registry.store import Store
from registry.work_pool import WorkPool

log = logging.getLogger(__name__)

MAX_VERSION = 2**31 - 1
MAX_ID = 2**31 - 1  # ids are Java ints in Confluent's wire format and clients
GLOBAL_CONTEXT = ".__GLOBAL"


def check_subject(subject: str, *, for_register: bool = False, config_or_mode: bool = False) -> None:
    """Confluent's ``QualifiedSubject.isValidSubject``: no control characters, the name is not ``__GLOBAL`` or
    ``__EMPTY``; to register, not empty or ``*``; the global context ``.__GLOBAL`` only for config and mode."""
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in subject):
        raise errors.invalid_subject(subject)
    context, name = contexts.split(subject)
    if name in ("__GLOBAL", "__EMPTY"):
        raise errors.invalid_subject(subject)
    if for_register and (name == "" or name == "*"):
        raise errors.invalid_subject(subject)
    if context == GLOBAL_CONTEXT and not config_or_mode:
        raise errors.invalid_subject(subject)


def _in_context(subject: str) -> str:
    """How Confluent's messages name the subject's context (``.`` or ``:.ctx:``)."""
    return contexts.delimited(contexts.context_of(subject))


class CheckListener(Protocol):
    """Told the outcome of every compatibility check the service runs (``registry.metrics.Metrics``)."""

    def compatibility_checked(self, result: str) -> None:
        """``"compatible"``, ``"incompatible"``, or ``"error"`` (the check itself failed)."""


@dataclass(frozen=True, slots=True)
class _Checked:
    """A new schema, parsed and found compatible, and what that verdict was based on (``_check_basis``):
    ``req`` with the metadata and rule set a registration stores, ``populated`` when they differ from those sent."""

    content: SchemaContent
    basis: tuple[Any, ...]
    req: SchemaRequest
    populated: bool
    parsed: ParsedSchema  # the stored form's parse (its canonical text is ``content.schema``)


@dataclass(frozen=True, slots=True)
class Registered:
    """What a registration stored (or found): the id, the version and its content. ``populated`` is True when
    the stored metadata or rule set is not what the request sent (merged from the config's defaults and
    overrides, or carried over from the previous version), so the answer shows what was stored."""

    id: int
    version: int
    content: SchemaContent
    populated: bool = False


@dataclass(frozen=True, slots=True)
class CompatibilityVerdict:
    is_compatible: bool
    messages: list[str]  # Confluent's message entries (empty when compatible)


class Service:
    """``limits`` bound what one request may make the service do; ``pool`` runs the schema work (parsing,
    normalizing, formats, compatibility checks), by default a pool sized by ``limits``;
    ``default_compatibility`` is the level when the global config names none."""

    def __init__(
        self,
        store: Store,
        *,
        default_compatibility: CompatibilityLevel = DEFAULTS.compatibility,
        limits: Limits = DEFAULTS.limits,
        pool: WorkPool | None = None,
        checks: CheckListener | None = None,
    ) -> None:
        self.store = store
        self.limits = limits
        self.checks = checks
        #: the config and mode in force (``settings.py``)
        self.settings = Settings(store.state, default_compatibility)
        #: parses schemas, in the bounded pool (``schema_parser.py``)
        self.parser = SchemaParser(store.state, limits, pool or WorkPool(limits.schema_workers, limits.schema_queue))
        #: topic-subject associations (``associations.py``)
        self.associations = Associations(store)
        self._write_lock = asyncio.Lock()
        # Until the first write, another instance may have written since we read the log; a node that
        # becomes leader later catches up in ``Election._become_leader`` before it takes writes.
        self._needs_barrier = True

    @property
    def state(self) -> State:
        return self.store.state

    # ---- reads ------------------------------------------------------------------------------------------

    def schema(self, schema_id: int, context: str = contexts.DEFAULT_CONTEXT) -> SchemaContent:
        """What the id names in ``context`` (soft-deleted versions keep their id readable); 40403 if nothing."""
        space = self.state.space(context)
        if schema_id not in space.id_versions:
            raise errors.schema_not_found(schema_id)
        return space.contents[schema_id]

    def guid_ids(self, guid: str) -> list[tuple[str, int]]:
        """(context, id) of the schema with this GUID (Confluent 8) in each context where a live-or-soft-deleted
        version has it: the default context first, then the others by name; 40403 when there is none. A GUID
        names content, so each context gives the same schema under its own id."""
        digest = contracts.digest_of_guid(guid)
        found = []
        if digest is not None:
            for context in sorted(self.state.spaces, key=lambda c: (c != contexts.DEFAULT_CONTEXT, c)):
                space = self.state.spaces[context]
                schema_id = space.digest_to_id.get(digest)
                if schema_id is not None and schema_id in space.id_versions:
                    found.append((context, schema_id))
        if not found:
            raise errors.schema_not_found(guid)
        return found

    def id_versions(
        self, schema_id: int, *, deleted: bool, context: str = contexts.DEFAULT_CONTEXT
    ) -> list[tuple[str, int]]:
        st = self.state
        space = st.space(context)
        if schema_id not in space.id_versions:
            raise errors.schema_not_found(schema_id)
        pairs = sorted(space.id_versions[schema_id])
        if not deleted:
            pairs = [p for p in pairs if not st.subjects[p[0]][p[1]].deleted]
        return pairs

    def id_context(self, schema_id: int, subject: str | None) -> str:
        """The context in which ``/schemas/ids/{id}?subject=`` looks the id up (Confluent's
        ``getSchemaKeyUsingContexts``): no subject, the default context; the subject's own context when the
        subject holds the id, or when it is qualified or only a context (``:.ctx:``); an unqualified subject that
        does not hold the id is tried in every context (the first that has it as that subject holding the id),
        and else the default context."""
        if not subject:
            return contexts.DEFAULT_CONTEXT
        subject = contexts.normalize(subject)
        context, name = contexts.split(subject)
        if context != contexts.DEFAULT_CONTEXT or not name or self._holds(subject, schema_id):
            return context
        for ctx in sorted(self.state.contexts):
            if self._holds(contexts.qualify(ctx, name), schema_id):
                return ctx
        return contexts.DEFAULT_CONTEXT

    def _holds(self, subject: str, schema_id: int) -> bool:
        return any(v.id == schema_id for v in self.state.subjects.get(subject, {}).values())

    def max_id(self, context: str = contexts.DEFAULT_CONTEXT) -> int:
        return self.state.space(context).max_id

    def list_contexts(self, prefix: str = "") -> list[str]:
        """``.`` and every context announced in the log, sorted; only those starting with ``prefix``."""
        names = [contexts.DEFAULT_CONTEXT, *sorted(self.state.contexts)]
        return [c for c in names if c.startswith(prefix)]

    def _using_contexts(self, subject: str) -> list[str]:
        """Confluent's ``getUsingContexts``: the subject, then (when unqualified) the same name in every context."""
        if contexts.is_qualified(subject):
            return [subject]
        return [subject, *(contexts.qualify(ctx, subject) for ctx in sorted(self.state.contexts))]

    def list_subjects(self, prefix: str, *, deleted: bool, deleted_only: bool) -> list[str]:
        """Sorted (qualified names of other contexts sort before the default context's); ``prefix`` as
        Confluent's ``subjectPrefix`` (``contexts.matches_prefix``)."""
        out = []
        for subject in sorted(self.state.subjects):
            if not contexts.matches_prefix(subject, prefix):
                continue
            vs = self.state.subjects[subject].values()
            all_deleted = all(v.deleted for v in vs)
            if deleted_only:
                if all_deleted:
                    out.append(subject)
            elif deleted or not all_deleted:
                out.append(subject)
        return out

    def list_versions(self, subject: str, *, deleted: bool, deleted_only: bool, as_negative: bool) -> list[int]:
        vs = self.state.versions(subject, deleted=deleted or deleted_only or as_negative)
        if deleted_only:
            vs = [v for v in vs if v.deleted]
        if not vs and not self.state.versions(subject, deleted=True if deleted_only else deleted):
            raise errors.subject_not_found(subject)
        nums = [-v.version if (as_negative and v.deleted) else v.version for v in vs]
        return sorted(nums, key=abs)

    def get_version(self, subject: str, version: int, *, deleted: bool, using_contexts: bool = False) -> Version:
        """``version`` is a number or ``LATEST``; 40401 when the subject has no versions, else 40402.
        ``using_contexts``: an unqualified subject missing here is also looked for in every context (as
        Confluent's ``GET /subjects/{s}/versions/{v}``)."""
        for candidate in self._using_contexts(subject) if using_contexts else [subject]:
            vs = self.state.versions(candidate, deleted=deleted)
            found = vs[-1:] if version == LATEST else [v for v in vs if v.version == version]
            if found:
                return found[0]
        if not self.state.versions(subject, deleted=deleted):
            raise errors.subject_not_found(subject)
        raise errors.version_not_found(version)

    def referenced_by(self, subject: str, version: int, *, deleted: bool = False) -> list[int]:
        v = self.get_version(subject, version, deleted=True)
        st = self.state
        ids = set()
        for s, n in st.referrers.get(v.ref_key, ()):
            ref = st.subjects.get(s, {}).get(n)
            if ref is not None and (deleted or not ref.deleted):
                ids.add(ref.id)
        return sorted(ids)

    def latest_with_metadata(self, subject: str, keys: list[str], values: list[str], *, deleted: bool) -> Version:
        vs = self.state.versions(subject, deleted=deleted)
        if not vs:
            raise errors.subject_not_found(subject)
        wanted = dict(zip(keys, values, strict=False))
        for v in reversed(vs):
            props = ((v.content.metadata or {}).get("properties")) or {}
            if all(props.get(k) == val for k, val in wanted.items()):
                return v
        raise errors.schema_not_found()

    def all_schemas(self, prefix: str, *, deleted: bool, latest_only: bool) -> list[Version]:
        out: list[Version] = []
        for subject in sorted(self.state.subjects):
            if not contexts.matches_prefix(subject, prefix):
                continue
            vs = self.state.versions(subject, deleted=deleted)
            out.extend(vs[-1:] if latest_only else vs)
        return out

    async def lookup(self, subject: str, req: SchemaRequest, *, normalize: bool | None, deleted: bool) -> Version:
        """The version of ``subject`` holding this schema. As Confluent: the schema is parsed first (42201),
        an empty one matches nothing, and a miss is 40401 when the subject has no versions (soft-deleted ones
        count only with ``deleted``), else 40403. ``normalize`` None: the subject's config decides. An
        unqualified subject is also looked up in every context (Confluent's ``...UsingContexts``)."""
        if normalize is None:
            normalize = self.settings.normalize_default(subject)
        match = None
        if not is_empty_schema(req.schema):
            for candidate in self._using_contexts(subject):
                try:
                    in_candidate = self.parser.with_concrete_references(req, candidate)
                    match = await self._match_in_subject(candidate, in_candidate, normalize=normalize, deleted=deleted)
                    if match is None:
                        # As Confluent: look again with the metadata and rule set a registration would store.
                        completed = self._with_contract(candidate, in_candidate, None)
                        if completed != in_candidate:
                            match = await self._match_in_subject(
                                candidate, completed, normalize=normalize, deleted=deleted
                            )
                except errors.ApiError as e:
                    if candidate == subject or e.status == 503:  # a full pool is retried, not a miss
                        raise
                    continue  # e.g. a reference that only resolves in the subject's own context
                if match is not None:
                    break
        if match is None:
            if not self.state.versions(subject, deleted=deleted):
                raise errors.subject_not_found(subject)
            raise errors.schema_not_found()
        return match

    def _with_contract(self, subject: str, req: SchemaRequest, new_version: int | None) -> SchemaRequest:
        """``req`` with the metadata and rule set a registration stores (``contracts.merged_contract``)."""
        prev = self.state.latest(subject)
        metadata, rule_set = contracts.merged_contract(
            self.settings.effective_config(subject),
            req.metadata,
            req.rule_set,
            (prev.content.metadata, prev.content.rule_set) if prev is not None else None,
            new_version,
            req.version is not None and req.version != 0,
        )
        if (metadata, rule_set) == (req.metadata, req.rule_set):
            return req
        return dataclasses.replace(req, metadata=metadata, rule_set=rule_set)

    async def _match_in_subject(
        self, subject: str, req: SchemaRequest, *, normalize: bool, deleted: bool
    ) -> Version | None:
        assert req.schema is not None  # callers check is_empty_schema first
        parsed = await self.parser.parse(
            req.schema_type, req.schema, req.references, normalize=normalize, subject=subject
        )
        digest = content_digest(parsed.canonical, req.references, req.metadata, req.rule_set)
        candidates = list(reversed(self.state.versions(subject, deleted=deleted)))
        for v in candidates:
            if v.content.digest == digest and v.content.schema_type == req.schema_type:
                return v
        if normalize:
            # Also match versions registered without normalize: compare normalized forms (Confluent misses these).
            for v in candidates:
                c = v.content
                if c.schema_type != req.schema_type or c.references != req.references:
                    continue
                if (c.metadata, c.rule_set) != (req.metadata, req.rule_set):
                    continue
                try:
                    parsed_stored = await self.parser.parsed_content(c, v.id, contexts.context_of(subject))
                    stored = await self.parser.schema_work(
                        self.parser.schema_type(c.schema_type).normalize, parsed_stored
                    )
                except InvalidSchemaError:
                    continue
                except errors.ApiError as e:
                    if e.status == 503:  # the pool is full: the client retries, not a miss
                        raise
                    continue
                if stored.canonical == parsed.canonical:
                    return v
        return None

    # ---- compatibility ----------------------------------------------------------------------------------

    async def _incompatibilities(
        self,
        subject: str,
        new: ParsedSchema,
        previous: list[Version],
        level: CompatibilityLevel,
        metadata: dict[str, Any] | None = None,
    ) -> list[str]:
        """Confluent's message entries for the first failing previous version (empty: compatible). With a
        ``compatibilityGroup`` in the subject's config, only versions whose metadata property of that name has the
        new schema's value (``metadata``; absent matches absent) are checked: a new major version starts a new
        lineage."""
        group = self.settings.effective_config(subject).get("compatibilityGroup")
        if group:
            value = contracts.group_value(metadata, group)
            previous = [v for v in previous if contracts.group_value(v.content.metadata, group) == value]
        if not previous or level is CompatibilityLevel.NONE:
            return []
        t = self.parser.schema_type(new.schema_type)
        parsed_prev = [
            # another type is never compatible: only its type is compared, so it stays unparsed
            await self.parser.parsed_content(v.content, v.id, contexts.context_of(subject))
            if v.content.schema_type == new.schema_type
            else ParsedSchema(v.content.schema_type, v.content.schema)
            for v in previous
        ]
        config = self.settings.effective_config(subject)
        policy = CompatibilityPolicy.for_name(config.get("compatibilityPolicy")) or CompatibilityPolicy.STRICT
        try:
            check = functools.partial(check_compatibility, t, level, new, parsed_prev, policy=policy)
            result = await self.parser.schema_work(check)
        except Exception as e:
            if not (isinstance(e, errors.ApiError) and e.status == 503):  # refused by a full pool: not checked
                self._checked("error")
            raise
        self._checked("incompatible" if result.incompatibilities else "compatible")
        if not result.incompatibilities:
            return []
        failed = previous[result.failed_index or 0]
        return compatibility_messages(
            result.incompatibilities,
            old_version=failed.version,
            old_schema=failed.content.schema,
            level=level,
            validate_fields=bool(config.get("validateFields", False)),
        )

    def _checked(self, result: str) -> None:
        if self.checks is not None:
            self.checks.compatibility_checked(result)

    async def test_compatibility(
        self, subject: str, version: int | None, req: SchemaRequest, *, normalize: bool | None, verbose: bool
    ) -> CompatibilityVerdict:
        """Against one live version (a number or ``LATEST``) or, with ``version`` None, against the versions
        the subject's level names. As Confluent: a missing version is 40402 (also when the subject does not
        exist), while ``latest`` of a missing subject is compatible; with ``verbose`` an invalid schema is a
        verdict with its message instead of a 42201."""
        if normalize is None:
            normalize = self.settings.normalize_default(subject)
        live = self.state.versions(subject)
        if version is not None and version != LATEST:
            previous = [v for v in live if v.version == version]
            if not previous:
                raise errors.version_not_found(version)
        elif version == LATEST:
            previous = live[-1:]
        else:
            previous = live
        try:
            req = self.parser.with_concrete_references(req, subject)
            if is_empty_schema(req.schema):
                raise errors.invalid_schema("Empty schema")
            assert req.schema is not None
            parsed = await self.parser.parse(
                req.schema_type, req.schema, req.references, normalize=normalize, subject=subject
            )
        except errors.ApiError as e:
            if verbose and e.error_code == errors.ErrorCode.INVALID_SCHEMA:
                return CompatibilityVerdict(False, [e.message])
            raise
        level = self.settings.effective_level(subject)
        messages = await self._incompatibilities(subject, parsed, previous, level, req.metadata)
        return CompatibilityVerdict(not messages, messages)

    # ---- writes -----------------------------------------------------------------------------------------

    async def _catch_up(self) -> None:
        """Before the first write: read the log to its end."""
        if self._needs_barrier:
            await self.store.barrier()
            self._needs_barrier = False

    async def _write(self, key: bytes, value: bytes | None, operation: str) -> None:
        await self._catch_up()
        await self.store.write(key, value, operation)

    async def register(
        self, subject: str, req: SchemaRequest, *, normalize: bool | None, force: bool = False
    ) -> Registered:
        check_subject(subject, for_register=True)
        if normalize is None:
            normalize = self.settings.normalize_default(subject)
        req = self.parser.with_concrete_references(req, subject)
        mode = self.settings.effective_mode(subject)
        # Fast path before any mode check: an already registered schema answers with its id (even READONLY).
        # Not when the config has default/override metadata or rule sets: those may make it a new version.
        if (
            not is_empty_schema(req.schema)
            and mode not in IMPORT_MODES
            and not contracts.has_defaults_or_overrides(self.settings.effective_config(subject))
        ):
            existing = await self._match_in_subject(subject, req, normalize=normalize, deleted=False)
            if (
                existing is not None
                and (req.id is None or req.id == existing.id)
                and (req.version is None or req.version == existing.version)
            ):
                return Registered(existing.id, existing.version, existing.content)
        where = f"Subject {errors.clip(subject)} in context {_in_context(subject)}"
        if mode in READ_ONLY_MODES:
            raise errors.operation_not_permitted(f"{where} is in read-only mode")
        importing = mode in IMPORT_MODES
        if req.id is not None and req.id >= 0 and not importing:
            raise errors.operation_not_permitted(f"{where} is not in import mode")
        if importing and req.id is None:
            raise errors.operation_not_permitted(f"{where} is not in read-write mode")
        # Parsing and the compatibility check, the costly part, run before the write lock: a schema that takes
        # seconds to check holds up no other write. Under the lock they are repeated only if the subject's
        # versions or config changed meanwhile.
        checked = await self._check_new(subject, req, normalize=normalize, importing=importing, force=force)
        async with self._write_lock:
            await self._catch_up()
            if checked.basis != self._check_basis(subject):
                checked = await self._check_new(subject, req, normalize=normalize, importing=importing, force=force)
            return await self._register_checked(subject, checked, importing=importing)

    def _check_basis(self, subject: str) -> tuple[Any, ...]:
        """What a compatibility verdict for ``subject`` depends on: its live versions, its next version (the
        default metadata and rule sets may depend on it) and its config."""
        st = self.state
        return (
            tuple((v.version, v.id) for v in st.versions(subject)),
            st.next_version(subject),
            self.settings.effective_config(subject),
        )

    async def _check_new(
        self, subject: str, req: SchemaRequest, *, normalize: bool, importing: bool, force: bool
    ) -> _Checked:
        st = self.state
        basis = self._check_basis(subject)
        live = st.versions(subject)
        sent = (req.metadata, req.rule_set)
        if not importing:  # as Confluent: IMPORT stores the metadata and rule set as sent
            req = self._with_contract(subject, req, st.next_version(subject))
        schema, schema_type, refs = req.schema, req.schema_type, req.references
        if is_empty_schema(schema):
            prev = st.latest(subject)
            if prev is None or importing:
                raise errors.invalid_schema("Empty schema")
            schema, schema_type, refs = prev.content.schema, prev.content.schema_type, prev.content.references
        assert schema is not None
        # IMPORT stores the canonical form too (Confluent canonicalizes in both paths); it only skips the checks
        # for new schemas here, and the compatibility check and version rules.
        parsed = await self.parser.parse(
            schema_type, schema, refs, normalize=normalize, validate=not importing, subject=subject
        )
        content = SchemaContent(schema_type, parsed.canonical, refs, req.metadata, req.rule_set)
        # 8.x's ?force=true skips the compatibility check; a schema already live here needs none
        if not importing and not force and not self._live_with(live, content):
            msgs = await self._incompatibilities(
                subject, parsed, live, self.settings.effective_level(subject), req.metadata
            )
            if msgs:
                raise errors.incompatible_schema(subject, msgs)
        return _Checked(content, basis, req, (req.metadata, req.rule_set) != sent, parsed)

    @staticmethod
    def _live_with(live: list[Version], content: SchemaContent) -> Version | None:
        for v in reversed(live):
            if v.content.digest == content.digest and v.content.schema_type == content.schema_type:
                return v
        return None

    async def _register_checked(self, subject: str, checked: _Checked, *, importing: bool) -> Registered:
        st = self.state
        req, content, populated = checked.req, checked.content, checked.populated
        schema_type = content.schema_type
        next_version = st.next_version(subject)

        if not importing:
            registered = self._live_with(st.versions(subject), content)
            if registered is not None:  # registered meanwhile (or normalize made them equal)
                return Registered(registered.id, registered.version, registered.content, populated)
            if req.version is not None and req.version != next_version:
                raise errors.invalid_schema("Version is not one more than previous version")
            version = next_version
        else:
            version = req.version if req.version is not None else next_version
            if version < 1:
                raise errors.invalid_version(str(version))

        context = contexts.context_of(subject)
        space = st.space(context)
        if req.id is not None and importing:
            schema_id = req.id
            owner = space.contents.get(schema_id)
            if owner is not None and (owner.digest != content.digest or owner.schema_type != schema_type):
                raise errors.operation_not_permitted(
                    f"Overwrite new schema with id {schema_id} in context {_in_context(subject)} is not permitted."
                )
            existing_v = st.subjects.get(subject, {}).get(version)
            if existing_v is not None and existing_v.id != schema_id:
                raise errors.operation_not_permitted(
                    f"Overwrite new schema with id {existing_v.id} in context {_in_context(subject)} is not permitted."
                )
            if existing_v is not None and not existing_v.deleted and existing_v.content.digest == content.digest:
                # The same import again (an exporter's retry, or two leaders around a failover): already stored,
                # as Confluent answers it, with nothing written twice.
                return Registered(schema_id, version, existing_v.content)
        else:
            schema_id = _allocate_id(space, content)
            if schema_id > MAX_ID:
                raise errors.store_error(
                    f"Register schema operation failed: no schema id is left (ids end at {MAX_ID})"
                )
        if context != contexts.DEFAULT_CONTEXT and context not in st.contexts:
            # As Confluent: the first subject of a context announces the context (what GET /contexts lists).
            await self.store.write(
                Key(schemas_topic.CONTEXT, context=context).encode(), schemas_topic.context_value(context), "Register"
            )

        value = schemas_topic.schema_value(
            subject=subject,
            version=version,
            schema_id=schema_id,
            schema_type=schema_type,
            schema=content.schema,
            references=content.references_json(),
            metadata=req.metadata,
            rule_set=req.rule_set,
            deleted=False,
        )
        await self.store.write(Key(schemas_topic.SCHEMA, subject, version).encode(), value, "Register")
        written = st.subjects.get(subject, {}).get(version)
        if written is None or written.id != schema_id:
            raise errors.store_error("Register schema operation failed: the record was rejected by the store")
        # The next version's compatibility check needs this one parsed: the parse just made is that (one copy in
        # both parse caches, not a second parse of the stored text).
        self.parser.remember(written.content, schema_id, context, checked.parsed)
        # Older soft-deleted versions of the same schema in this subject are superseded: tombstone them.
        for v in st.versions(subject, deleted=True):
            if v.deleted and v.id == schema_id and v.version != version and not st.referrers.get(v.ref_key):
                await self._tombstone_version(v)
        return Registered(schema_id, version, written.content, populated)

    async def _tombstone_version(self, v: Version) -> None:
        for raw in sorted(self.state.raw_keys(Key(schemas_topic.SCHEMA, v.subject, v.version))):
            await self.store.write(raw, None, "Delete")

    async def _tombstone_subject_settings(self, subject: str) -> None:
        st = self.state
        for keytype, present in (
            (schemas_topic.CONFIG, subject in st.configs),
            (schemas_topic.MODE, subject in st.modes),
        ):
            if present:
                for raw in sorted(st.raw_keys(Key(keytype, subject))):
                    await self.store.write(raw, None, "Delete")

    def _check_not_readonly(self, subject: str | None) -> None:
        if self.settings.effective_mode(subject) in READ_ONLY_MODES:
            where = f"Subject {subject}" if subject is not None else "Global mode"
            context = _in_context(subject) if subject is not None else contexts.DEFAULT_CONTEXT
            raise errors.operation_not_permitted(f"{where} in context {context} is in read-only mode")

    def _referenced_from_outside(self, subject: str, versions: list[Version]) -> Version | None:
        for v in versions:
            for s, _n in self.state.referrers.get(v.ref_key, ()):
                if s != subject:
                    return v
        return None

    def _versions_to_delete(self, subject: str) -> list[Version]:
        """Every version of ``subject``, soft-deleted ones too: 40401 when it has none, 42205 when read-only."""
        all_versions = self.state.versions(subject, deleted=True)
        if not all_versions:
            raise errors.subject_not_found(subject)
        self._check_not_readonly(subject)
        return all_versions

    async def delete_subject(self, subject: str, *, permanent: bool) -> list[int]:
        async with self._write_lock:
            all_versions = self._versions_to_delete(subject)
            live = [v for v in all_versions if not v.deleted]
            if not permanent:
                if not live:
                    raise errors.subject_soft_deleted(subject)
                ref = self._referenced_from_outside(subject, live)
                if ref is not None:
                    raise errors.reference_exists(subject, ref.version)
                await self._write(
                    Key(schemas_topic.DELETE_SUBJECT, subject).encode(),
                    schemas_topic.delete_subject_value(subject, all_versions[-1].version),
                    "Delete subject",
                )
                return [v.version for v in live]
            if live:
                raise errors.subject_not_soft_deleted(subject)
            ref = self._referenced_from_outside(subject, all_versions)
            if ref is not None:
                raise errors.reference_exists(subject, ref.version)
            await self._catch_up()
            for v in reversed(all_versions):  # descending, for references inside the subject
                await self._tombstone_version(v)
            await self._tombstone_subject_settings(subject)
            return [v.version for v in all_versions]

    async def delete_version(self, subject: str, version: int, *, permanent: bool) -> int:
        """``version`` is a number or ``LATEST`` (the newest live version)."""
        async with self._write_lock:
            st = self.state
            all_versions = self._versions_to_delete(subject)
            if version == LATEST:
                live = [v for v in all_versions if not v.deleted]
                if not live:
                    raise errors.version_not_found(version)
                target = live[-1]
            else:
                found = [v for v in all_versions if v.version == version]
                if not found:
                    raise errors.version_not_found(version)
                target = found[0]
            if st.referrers.get(target.ref_key):
                raise errors.reference_exists(subject, target.version)
            if not permanent:
                if target.deleted:
                    raise errors.version_soft_deleted(subject, target.version)
                c = target.content
                value = schemas_topic.schema_value(
                    subject=subject,
                    version=target.version,
                    schema_id=target.id,
                    schema_type=c.schema_type,
                    schema=c.schema,
                    references=c.references_json(),
                    metadata=c.metadata,
                    rule_set=c.rule_set,
                    deleted=True,
                )
                await self._write(Key(schemas_topic.SCHEMA, subject, target.version).encode(), value, "Delete")
                return target.version
            if not target.deleted:
                raise errors.version_not_soft_deleted(subject, target.version)
            await self._catch_up()
            await self._tombstone_version(target)
            if not st.versions(subject, deleted=True):
                await self._tombstone_subject_settings(subject)
            return target.version

    # config ---------------------------------------------------------------------------------------------

    async def put_config(self, subject: str | None, update: dict[str, Any]) -> None:
        """Merge ``update`` (stored field names, values already checked) over the subject's (or global) config."""
        if subject is not None:
            check_subject(subject, config_or_mode=True)
        async with self._write_lock:
            self._check_not_readonly(subject)
            merged = {**(self.state.configs.get(subject) or {}), **update}
            await self._write(
                Key(schemas_topic.CONFIG, subject).encode(),
                schemas_topic.config_value(subject, merged),
                "Update config",
            )

    async def delete_config(self, subject: str | None) -> dict[str, Any]:
        async with self._write_lock:
            st = self.state
            if subject is not None and subject not in st.configs and not st.versions(subject, deleted=True):
                raise errors.subject_not_found(subject)
            previous = self.settings.get_config(subject, default_to_global=True)
            self._check_not_readonly(subject)
            if subject in st.configs:
                for raw in sorted(st.raw_keys(Key(schemas_topic.CONFIG, subject))):
                    await self._write(raw, None, "Delete config")
            return previous

    # mode -----------------------------------------------------------------------------------------------

    async def put_mode(self, subject: str | None, mode: Mode, *, force: bool) -> Mode:
        if subject is not None:
            check_subject(subject, config_or_mode=True)
        if mode is Mode.FORWARD and subject is not None:
            raise errors.invalid_mode()
        async with self._write_lock:
            st = self.state
            if mode is Mode.IMPORT and not force:
                scope = list(st.subjects) if subject is None else self.settings.mode_scope(subject)
                if any(st.versions(s) for s in scope):
                    raise errors.operation_not_permitted("Cannot import since found existing subjects")
            await self._write(
                Key(schemas_topic.MODE, subject).encode(), schemas_topic.mode_value(subject, mode), "Update mode"
            )
        return mode

    async def delete_mode(self, subject: str | None) -> str:
        async with self._write_lock:
            st = self.state
            if subject is not None and subject not in st.modes and not st.versions(subject, deleted=True):
                raise errors.subject_not_found(subject)
            previous = self.settings.get_mode(subject, default_to_global=True)
            if subject in st.modes:
                for raw in sorted(st.raw_keys(Key(schemas_topic.MODE, subject))):
                    await self._write(raw, None, "Delete mode")
            return previous

    # contexts -------------------------------------------------------------------------------------------

    async def delete_context(self, context: str) -> None:
        """Confluent's ``DELETE /contexts/{ctx}``: only a context without subjects (soft-deleted ones count)
        may go (42211); its CONTEXT record is tombstoned, so ``GET /contexts`` stops listing it."""
        async with self._write_lock:
            st = self.state
            if any(contexts.context_of(s) == context for s in st.subjects):
                raise errors.context_not_empty(contexts.delimited(context))
            if context in st.contexts:
                for raw in sorted(st.raw_keys(Key(schemas_topic.CONTEXT, context=context))):
                    await self._write(raw, None, "Delete context")


def _allocate_id(space: IdSpace, content: SchemaContent) -> int:
    """The id of an identical schema of the context (same id across subjects), else the context's max + 1."""
    reuse = space.digest_to_id.get(content.digest)
    if reuse is not None and space.contents[reuse].schema_type == content.schema_type:
        return reuse
    schema_id = space.max_id + 1
    while schema_id in space.contents:  # never hand out an id that names something else
        schema_id += 1
    return schema_id
