"""A registry's contents as data: read over the public Confluent API, written to and read from a directory.

Everything goes through documented endpoints (``/subjects``, ``/subjects/{s}/versions``, ``/config``,
``/mode``), so a snapshot can be taken of Confluent Schema Registry and Karapace as well as schemakit.
Soft-deleted versions are read with ``deleted=true`` and told apart by the live version list; hard-deleted
ones are gone from the API and so from the snapshot. Config and mode are read for the registry and for each
subject that has versions (the API cannot list settings of subjects without any).

The directory (``schemakit registry export``)::

    registry.json                  format, source, time; global config and mode; per-subject config and mode
    schemas.jsonl                  one JSON object per schema version, in the order an import registers them
    schemas/<subject>/<version>.avsc|.json|.proto    the schema text, pretty-printed, for reading (not read back)
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from schemakit.connection import seg
from schemakit.output import pretty_schema
from schemakit.progress import NoProgress, Progress
from schemakit.schema_files import TYPE_EXTENSIONS

if TYPE_CHECKING:
    from serdes import RegistryClient

FORMAT = "schemakit-registry-export"
FORMAT_VERSION = 1
MANIFEST = "registry.json"
SCHEMAS = "schemas.jsonl"
READABLE = "schemas"

#: error codes meaning "not there": subject not found, no subject-level config, no subject-level mode
_ABSENT = frozenset({40401, 40408, 40409})

T = TypeVar("T")
R = TypeVar("R")


class SnapshotError(Exception):
    """An export directory that cannot be read or written; the message names the file (and line)."""


@dataclass(frozen=True)
class SchemaVersion:
    """One version of one subject, with everything an IMPORT-mode registration needs to recreate it."""

    subject: str
    version: int
    id: int
    schema_type: str
    schema: str
    references: tuple[tuple[str, str, int], ...] = ()  # (name, subject, version)
    metadata: dict[str, Any] | None = None
    rule_set: dict[str, Any] | None = None
    deleted: bool = False

    @property
    def key(self) -> tuple[str, int]:
        return self.subject, self.version

    def same_schema(self, other: SchemaVersion) -> bool:
        """Same id and the same stored content (what a GET answers), deletion state aside."""
        return (self.id, self.schema_type, self.schema, self.references, self.metadata, self.rule_set) == (
            other.id,
            other.schema_type,
            other.schema,
            other.references,
            other.metadata,
            other.rule_set,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "version": self.version,
            "id": self.id,
            "schemaType": self.schema_type,
            "schema": self.schema,
            "references": [{"name": n, "subject": s, "version": v} for n, s, v in self.references],
            "metadata": self.metadata,
            "ruleSet": self.rule_set,
            "deleted": self.deleted,
        }

    def import_body(self) -> dict[str, Any]:
        """The ``POST /subjects/{s}/versions`` body that registers this version with its id and version."""
        body = {k: v for k, v in self.to_json().items() if k not in ("subject", "deleted") and v is not None}
        if not self.references:
            del body["references"]
        return body

    @classmethod
    def from_api(cls, body: dict[str, Any], deleted: bool) -> SchemaVersion:
        """From a ``GET /subjects/{s}/versions/{v}`` answer (``schemaType`` absent means AVRO)."""
        return cls(
            subject=body["subject"],
            version=int(body["version"]),
            id=int(body["id"]),
            schema_type=body.get("schemaType") or "AVRO",
            schema=body["schema"],
            references=tuple((r["name"], r["subject"], int(r["version"])) for r in body.get("references") or ()),
            metadata=body.get("metadata") or None,
            rule_set=body.get("ruleSet") or None,
            deleted=deleted,
        )

    @classmethod
    def from_json(cls, body: Any, where: str) -> SchemaVersion:
        try:
            if not isinstance(body, dict):
                raise TypeError("not a JSON object")
            version = cls.from_api(body, bool(body.get("deleted", False)))
            if not isinstance(version.schema, str) or not isinstance(version.subject, str):
                raise TypeError("'subject' and 'schema' must be strings")
            return version
        except (KeyError, TypeError, ValueError) as e:
            raise SnapshotError(f"{where}: not a schema version ({type(e).__name__}: {e})") from None


@dataclass
class Snapshot:
    """What a registry holds. ``mode``/``config`` are None when the registry did not say (no such endpoint)."""

    versions: list[SchemaVersion] = field(default_factory=list)
    config: dict[str, Any] | None = None
    mode: str | None = None
    subject_configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    subject_modes: dict[str, str] = field(default_factory=dict)
    source: str = ""

    @property
    def subjects(self) -> list[str]:
        return sorted({v.subject for v in self.versions})

    def counts(self) -> dict[str, int]:
        return {
            "subjects": len(self.subjects),
            "versions": len(self.versions),
            "deleted_versions": sum(v.deleted for v in self.versions),
            "ids": len({v.id for v in self.versions}),
        }


def dependency_order(versions: Iterable[SchemaVersion]) -> list[SchemaVersion]:
    """Versions ordered by id (the order they were first registered) with every referenced version before
    the versions that reference it. References to versions outside the set do not constrain the order."""
    by_key = {v.key: v for v in versions}
    waiting_on: dict[tuple[str, int], int] = {}
    dependents: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for v in by_key.values():
        deps = {(s, n) for _name, s, n in v.references if (s, n) in by_key and (s, n) != v.key}
        waiting_on[v.key] = len(deps)
        for d in deps:
            dependents.setdefault(d, []).append(v.key)
    ready = [(v.id, v.subject, v.version) for v in by_key.values() if waiting_on[v.key] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        _id, subject, version = heapq.heappop(ready)
        out.append(by_key[(subject, version)])
        for d in dependents.get((subject, version), ()):
            waiting_on[d] -= 1
            if waiting_on[d] == 0:
                heapq.heappush(ready, (by_key[d].id, d[0], d[1]))
    if len(out) != len(by_key):  # a reference cycle: no registry accepts one, keep the rest in id order
        placed = {v.key for v in out}
        out += sorted((v for v in by_key.values() if v.key not in placed), key=lambda v: (v.id, v.key))
    return out


# ---- reading a registry ---------------------------------------------------------------------------------


class RegistryReader:
    """Reads a whole registry through its public API, ``jobs`` requests at a time, reporting to ``progress``."""

    def __init__(self, client: RegistryClient, progress: Progress | None = None, jobs: int = 8) -> None:
        self.client = client
        self.progress = progress or NoProgress()
        self.jobs = max(1, jobs)

    def read(self) -> Snapshot:
        from serdes import RegistryError

        get = self.client.request
        subjects: list[str] = get("GET", "/subjects", params={"deleted": True})
        per_subject = self._each("reading subjects", subjects, self._read_subject)
        wanted = [
            (s, v, v in live) for s, (every, live, _c, _m) in zip(subjects, per_subject, strict=True) for v in every
        ]
        versions = self._each("reading versions", wanted, self._read_version)
        snap = Snapshot(dependency_order(versions), source=self.client.urls[0])
        for s, (_every, _live, config, mode) in zip(subjects, per_subject, strict=True):
            if config is not None:
                snap.subject_configs[s] = config
            if mode is not None:
                snap.subject_modes[s] = mode
        try:
            snap.config = get("GET", "/config")
        except RegistryError as e:
            if e.status != 404:
                raise
        try:
            snap.mode = get("GET", "/mode")["mode"]
        except RegistryError as e:
            if e.status != 404:
                raise
        return snap

    def _each(self, phase: str, items: list[T], work: Callable[[T], R]) -> list[R]:
        self.progress.start(phase, len(items))

        def step(item: T) -> R:
            result = work(item)
            self.progress.advance()
            return result

        try:
            if self.jobs == 1 or len(items) < 2:
                return [step(i) for i in items]
            with ThreadPoolExecutor(self.jobs, thread_name_prefix="schemakit-read") as pool:
                return list(pool.map(step, items))
        finally:
            self.progress.finish()

    def _absent_is_none(self, path: str, params: dict[str, Any] | None = None) -> Any:
        from serdes import RegistryError

        try:
            return self.client.request("GET", path, params=params)
        except RegistryError as e:
            if e.error_code in _ABSENT or e.status == 404:
                return None
            raise

    def _read_subject(self, subject: str) -> tuple[list[int], set[int], dict[str, Any] | None, str | None]:
        every = self._absent_is_none(f"/subjects/{seg(subject)}/versions", {"deleted": True}) or []
        live = set(self._absent_is_none(f"/subjects/{seg(subject)}/versions") or ())
        config = self._absent_is_none(f"/config/{seg(subject)}")
        mode = self._absent_is_none(f"/mode/{seg(subject)}")
        return every, live, config, mode["mode"] if mode else None

    def _read_version(self, item: tuple[str, int, bool]) -> SchemaVersion:
        subject, version, live = item
        body = self.client.request("GET", f"/subjects/{seg(subject)}/versions/{version}", params={"deleted": True})
        return SchemaVersion.from_api(body, deleted=not live)


# ---- the export directory -------------------------------------------------------------------------------


def readable_path(root: Path, v: SchemaVersion) -> Path:
    """``schemas/<subject>/<version>[.deleted].<ext>``; the subject percent-encoded so any name is one
    safe directory (no ``/``, and no leading dot: ``.`` and ``..`` are subjects too)."""
    name = seg(v.subject)
    if name.startswith("."):
        name = "%2E" + name[1:]
    suffix = ".deleted" if v.deleted else ""
    return root / READABLE / name / f"{v.version}{suffix}{TYPE_EXTENSIONS.get(v.schema_type, '.txt')}"


def check_out_dir(out: Path) -> None:
    """An export goes into a new or empty directory, so it never mixes with another one."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SnapshotError(f"{out}: exists and is not an empty directory; export into a new directory")


def write_dir(snap: Snapshot, out: Path, progress: Progress | None = None) -> None:
    """Write ``snap`` into ``out`` (see ``check_out_dir``)."""
    progress = progress or NoProgress()
    check_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "source": snap.source,
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "counts": snap.counts(),
        "config": snap.config,
        "mode": snap.mode,
        "subjects": {
            s: {"config": snap.subject_configs.get(s), "mode": snap.subject_modes.get(s)}
            for s in sorted(set(snap.subject_configs) | set(snap.subject_modes))
        },
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    progress.start("writing files", len(snap.versions))
    with (out / SCHEMAS).open("w", encoding="utf-8") as lines:
        for v in snap.versions:
            lines.write(json.dumps(v.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n")
            path = readable_path(out, v)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(pretty_schema(v.schema_type, v.schema) + "\n", encoding="utf-8")
            progress.advance()
    progress.finish()


def read_dir(root: Path) -> Snapshot:
    manifest_path = root / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SnapshotError(
            f"{manifest_path}: missing; is {root} a directory written by `schemakit registry export`?"
        ) from None
    except (OSError, ValueError) as e:
        raise SnapshotError(f"{manifest_path}: cannot read: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise SnapshotError(f"{manifest_path}: not a schemakit registry export (format {FORMAT!r} expected)")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise SnapshotError(
            f"{manifest_path}: format_version {manifest.get('format_version')!r} is not "
            f"{FORMAT_VERSION}; this schemakit cannot read it"
        )
    snap = Snapshot(config=manifest.get("config"), mode=manifest.get("mode"), source=manifest.get("source", ""))
    for s, settings in (manifest.get("subjects") or {}).items():
        if settings.get("config") is not None:
            snap.subject_configs[s] = settings["config"]
        if settings.get("mode") is not None:
            snap.subject_modes[s] = settings["mode"]
    schemas_path = root / SCHEMAS
    versions = []
    try:
        with schemas_path.open(encoding="utf-8") as lines:
            for n, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                where = f"{schemas_path}:{n}"
                try:
                    body = json.loads(line)
                except ValueError as e:
                    raise SnapshotError(f"{where}: not JSON: {e}") from None
                versions.append(SchemaVersion.from_json(body, where))
    except OSError as e:
        raise SnapshotError(f"{schemas_path}: cannot read: {e}") from None
    seen: dict[tuple[str, int], int] = {}
    for n, v in enumerate(versions, 1):
        if v.key in seen:
            raise SnapshotError(
                f"{schemas_path}: subject {v.subject!r} version {v.version} appears twice "
                f"(entries {seen[v.key]} and {n})"
            )
        seen[v.key] = n
    snap.versions = dependency_order(versions)
    return snap
