"""A schema exporter's definition, as Confluent's ``/exporters`` API reads and writes it, and what it means:
which source subjects it exports (``subjects``, with wildcards) and under which names the destination gets
them (``contextType``/``context`` and ``subjectRenameFormat``).

Names at the destination:

- the destination context is the exporter's context followed by the subject's source context: with
  ``contextType`` ``CUSTOM`` and ``context`` ``dc1``, ``orders`` goes to ``:.dc1:orders`` and ``:.prod:orders``
  to ``:.dc1.prod:orders``. ``AUTO`` (the default) does the same with a context named after the source
  registry (its ``--group-id``; Confluent Cloud names it after its own source cluster id, ``.lsrc-…``); ``NONE``
  keeps the source context (the default context's subjects land in the destination's default context);
- ``subjectRenameFormat`` replaces ``${subject}`` with the subject's name within its context (``dc_${subject}``
  turns ``orders`` into ``dc_orders``).

A ``subjects`` entry is a glob (``*``, ``?``, ``[...]``) over subject names of one context: ``orders*`` in the
default context, ``:.prod:*`` in ``.prod``; the context may be a glob too, and ``:*:`` alone is every subject of
every context.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from registry import contexts, errors

AUTO, CUSTOM, NONE = "AUTO", "CUSTOM", "NONE"
CONTEXT_TYPES = (AUTO, CUSTOM, NONE)
SUBJECT_PLACEHOLDER = "${subject}"
#: the destination's URL (Confluent's key; a comma-separated list names several instances)
URL_CONFIG = "schema.registry.url"
MAX_NAME_LENGTH = 256


@dataclass(frozen=True, slots=True)
class ExporterDefinition:
    name: str
    config: dict[str, str]
    context_type: str = AUTO
    context: str | None = None
    subjects: tuple[str, ...] = ("*",)
    subject_rename_format: str | None = None
    #: where AUTO puts the subjects: a context named after the source registry (set by the manager)
    source_id: str = field(default="schema-registry", compare=False)

    def to_json(self) -> dict[str, Any]:
        """Confluent's ``ExporterResponse``: the definition as ``GET /exporters/{name}`` answers it."""
        return {
            "name": self.name,
            "subjects": list(self.subjects),
            "contextType": self.context_type,
            "context": self.context_name,
            "subjectRenameFormat": self.subject_rename_format or SUBJECT_PLACEHOLDER,
            "config": dict(self.config),
        }

    def stored(self) -> dict[str, Any]:
        """The EXPORTER record's value."""
        out = self.to_json()
        out["context"] = self.context
        return out

    @classmethod
    def from_stored(cls, value: dict[str, Any], source_id: str) -> ExporterDefinition:
        return cls(
            name=str(value["name"]),
            config={str(k): str(v) for k, v in (value.get("config") or {}).items()},
            context_type=str(value.get("contextType") or AUTO),
            context=value.get("context"),
            subjects=tuple(value.get("subjects") or ("*",)),
            subject_rename_format=value.get("subjectRenameFormat"),
            source_id=source_id,
        )

    @property
    def context_name(self) -> str:
        """The destination context the exporter's subjects go under (``.`` for NONE: their own)."""
        if self.context_type == CUSTOM and self.context:
            return contexts.parse_context(self.context)
        if self.context_type == AUTO:
            return contexts.parse_context(self.source_id)
        return contexts.DEFAULT_CONTEXT

    def updated(self, changes: dict[str, Any]) -> ExporterDefinition:
        """This definition with the fields a ``PUT /exporters/{name}`` gives replaced (``config`` merged key by
        key, as Confluent does), checked."""
        new = replace(
            self,
            context_type=changes.get("contextType") or self.context_type,
            context=changes.get("context", self.context),
            subjects=tuple(changes["subjects"]) if changes.get("subjects") is not None else self.subjects,
            subject_rename_format=changes.get("subjectRenameFormat") or self.subject_rename_format,
            config={**self.config, **(changes.get("config") or {})},
        )
        new.check()
        return new

    def check(self) -> None:
        """Confluent's checks: 40950 (name), 40951 (config, context), 40952 (subjects)."""
        check_name(self.name)
        url = self.config.get(URL_CONFIG, "").strip()
        if not url:
            raise errors.invalid_exporter_config(f"Missing or invalid exporter config: '{URL_CONFIG}' is required")
        for one in url.split(","):
            if not one.strip().startswith(("http://", "https://")):
                raise errors.invalid_exporter_config(
                    f"Missing or invalid exporter config: '{URL_CONFIG}' must be http:// or https:// URLs"
                )
        if self.context_type not in CONTEXT_TYPES:
            raise errors.invalid_exporter_config(
                f"Missing or invalid exporter config: contextType must be one of {', '.join(CONTEXT_TYPES)}"
            )
        if self.context_type == CUSTOM:
            try:
                ok = bool(self.context) and contexts.parse_context(self.context or "") != contexts.DEFAULT_CONTEXT
            except ValueError:
                ok = False
            if not ok:
                raise errors.invalid_exporter_config(
                    "Missing or invalid exporter config: contextType CUSTOM needs a context name other than '.'"
                )
        if not self.subjects or any(not isinstance(s, str) or not s.strip() for s in self.subjects):
            raise errors.invalid_exporter_subjects("Invalid exporter subjects: give one or more subject patterns")
        fmt = self.subject_rename_format
        if fmt is not None and (":" in fmt.replace(SUBJECT_PLACEHOLDER, "") or not fmt.strip()):
            raise errors.invalid_exporter_config(
                "Missing or invalid exporter config: subjectRenameFormat may not name a context (no ':')"
            )


def check_name(name: str | None) -> None:
    if not name or len(name) > MAX_NAME_LENGTH or any(ord(c) < 0x20 or c in "/:" for c in name):
        raise errors.invalid_exporter_name(
            "Missing or invalid exporter name: 1 to 256 characters, no control characters, '/' or ':'"
        )


class SubjectMapping:
    """Which source subjects an exporter covers, and their names at the destination."""

    def __init__(self, definition: ExporterDefinition) -> None:
        self.prefix = definition.context_name if definition.context_type != NONE else ""
        self.format = definition.subject_rename_format or SUBJECT_PLACEHOLDER
        self.patterns = [_pattern(p) for p in definition.subjects]

    def covers(self, subject: str) -> bool:
        context, name = contexts.split(contexts.normalize(subject))
        if name == "":
            return self.covers_context(context)
        return any(fnmatch.fnmatchcase(context, c) and fnmatch.fnmatchcase(name, n) for c, n in self.patterns)

    def covers_context(self, context: str) -> bool:
        """Does some pattern take subjects of ``context`` (its config and mode are exported then)?"""
        return any(fnmatch.fnmatchcase(context, c) for c, _ in self.patterns)

    def context(self, source_context: str) -> str:
        """The destination context of ``source_context``'s subjects."""
        if not self.prefix:
            return source_context
        return self.prefix if source_context == contexts.DEFAULT_CONTEXT else self.prefix + source_context

    def subject(self, subject: str) -> str:
        """The destination's name of a source subject (``:.ctx:`` alone, a context's own config, is kept)."""
        context, name = contexts.split(contexts.normalize(subject))
        renamed = self.format.replace(SUBJECT_PLACEHOLDER, name) if name else name
        return contexts.qualify(self.context(context), renamed)

    def settings_subject(self, subject: str | None) -> str | None:
        """Where a source config or mode goes: a subject's to its renamed subject, the global one (None) to the
        destination context's own (its global one for NONE)."""
        if subject is None:
            context = self.context(contexts.DEFAULT_CONTEXT)
            return None if context == contexts.DEFAULT_CONTEXT else contexts.qualify(context, "")
        return self.subject(subject)

    def references(self, parent: str, references: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """A schema's references, renamed as their subjects are; relative (unqualified) when the referenced
        subject lands in the referrer's destination context, as the source wrote them."""
        parent_context = contexts.context_of(self.subject(parent))
        out = []
        for r in references:
            target = self.subject(contexts.qualify_reference(parent, str(r["subject"])))
            context, name = contexts.split(target)
            out.append({**r, "subject": name if context == parent_context else target})
        return out


def _pattern(text: str) -> tuple[str, str]:
    """(context glob, name glob) of a ``subjects`` entry."""
    text = text.strip()
    if text.startswith(contexts.WILDCARD):
        return "*", text[len(contexts.WILDCARD) :] or "*"
    if text.startswith(":."):
        context, name = contexts.split(text)
        return context, name or "*"
    return contexts.DEFAULT_CONTEXT, text
