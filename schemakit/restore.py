"""Restoring a snapshot into a registry: a plan of API calls, checked before anything is written.

The plan compares the snapshot with what the target holds. Versions the target already has with the same id
and schema are left alone (so an interrupted import can be re-run with ``force``); any other clash (a version
or an id that the target holds with another schema, a version deleted there but live in the snapshot) stops
the restore before it writes anything. The calls, in order:

1. global mode IMPORT (only if there is something to register), so versions keep their ids and numbers;
2. every missing version, registered with its id and version, referenced versions first;
3. soft deletes, referencing versions first (a registry refuses to delete a version still referenced);
4. config, then per-subject config and mode, then the global mode the snapshot had.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from schemakit.connection import seg
from schemakit.progress import NoProgress, Progress
from schemakit.snapshot import SchemaVersion, Snapshot

if TYPE_CHECKING:
    from serdes import RegistryClient

_WRITE_BLOCKING_MODES = frozenset({"READONLY", "READONLY_OVERRIDE", "READWRITE"})


class RestoreError(Exception):
    """The restore stopped; the message says which call failed and in what state the target was left."""


@dataclass(frozen=True)
class Call:
    """One API call of the plan; ``description`` is what ``--dry-run`` prints."""

    kind: str  # register, delete, config, mode
    description: str
    method: str
    path: str
    body: Any = None
    params: dict[str, Any] | None = None
    expect_id: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "description": self.description,
            "method": self.method,
            "path": self.path,
        }
        if self.body is not None:
            out["body"] = self.body
        if self.params:
            out["params"] = self.params
        return out


@dataclass
class Plan:
    calls: list[Call] = field(default_factory=list)
    unchanged: int = 0
    conflicts: list[str] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(1 for c in self.calls if c.kind == kind)

    def summary(self) -> str:
        regs = [c for c in self.calls if c.kind == "register"]
        parts = []
        if regs:
            parts.append(f"register {len(regs)} schema versions in {len({c.path for c in regs})} subjects")
        for kind, what in (
            ("delete", "soft-delete {} versions"),
            ("config", "set {} configs"),
            ("mode", "set {} modes"),
        ):
            if self.count(kind):
                parts.append(what.format(self.count(kind)))
        return (", ".join(parts) or "change nothing") + f"; {self.unchanged} versions were there already"


def non_empty_message(target: Snapshot, url: str) -> str | None:
    """Why the target does not count as empty (None when it is)."""
    if not target.versions:
        return None
    subjects = target.subjects
    shown = ", ".join(subjects[:3]) + (", …" if len(subjects) > 3 else "")
    return (
        f"the registry at {url} is not empty: {len(subjects)} subjects, {len(target.versions)} schema "
        f"versions ({shown}). Import restores into an empty registry; pass --force to import into this one "
        "(versions it already has with the same id and schema are skipped, any other clash stops the "
        "import before it writes anything)"
    )


def plan_restore(source: Snapshot, target: Snapshot) -> Plan:
    plan = Plan()
    have = {v.key: v for v in target.versions}
    owners = {v.id: v for v in target.versions}
    to_register: list[SchemaVersion] = []
    to_delete: list[SchemaVersion] = []
    for v in source.versions:
        there = have.get(v.key)
        label = f"subject {v.subject!r} version {v.version}"
        if there is not None:
            if not there.same_schema(v):
                plan.conflicts.append(
                    f"{label}: the target holds id {there.id} with another schema than the export's id {v.id}"
                )
            elif there.deleted and not v.deleted:
                plan.conflicts.append(
                    f"{label}: soft-deleted in the target, live in the export (a registry cannot undelete a version)"
                )
            elif v.deleted and not there.deleted:
                to_delete.append(v)
            else:
                plan.unchanged += 1
            continue
        owner = owners.setdefault(v.id, v)
        if not owner.same_schema(v):
            where = "the target" if owner.key in have else "the export"
            plan.conflicts.append(
                f"{label}: id {v.id} belongs to another schema in {where} "
                f"(subject {owner.subject!r} version {owner.version})"
            )
            continue
        mode = target.subject_modes.get(v.subject)
        if mode in _WRITE_BLOCKING_MODES:
            plan.conflicts.append(
                f"{label}: subject {v.subject!r} has mode {mode} in the target, which refuses "
                "registrations with ids; delete that mode first"
            )
            continue
        to_register.append(v)
        if v.deleted:
            to_delete.append(v)
    if plan.conflicts:
        return plan
    switch = bool(to_register) and target.mode != "IMPORT"
    if switch:
        plan.calls.append(
            Call(
                "mode",
                "set global mode IMPORT (keeps ids and versions)",
                "PUT",
                "/mode",
                {"mode": "IMPORT"},
                {"force": True} if target.versions else None,
            )
        )
    for v in to_register:
        gone = " (soft-deleted below)" if v.deleted else ""
        plan.calls.append(
            Call(
                "register",
                f"register {v.subject!r} version {v.version} id {v.id} {v.schema_type}{gone}",
                "POST",
                f"/subjects/{seg(v.subject)}/versions",
                v.import_body(),
                expect_id=v.id,
            )
        )
    for v in reversed(to_delete):  # dependency order reversed: referencing versions go first
        plan.calls.append(
            Call(
                "delete",
                f"soft-delete {v.subject!r} version {v.version}",
                "DELETE",
                f"/subjects/{seg(v.subject)}/versions/{v.version}",
            )
        )
    if source.config is not None and source.config != target.config:
        plan.calls.append(
            Call(
                "config",
                f"set global config {_config_text(source.config)}",
                "PUT",
                "/config",
                _config_body(source.config),
            )
        )
    for s, cfg in sorted(source.subject_configs.items()):
        if target.subject_configs.get(s) != cfg:
            plan.calls.append(
                Call(
                    "config", f"set config of {s!r}: {_config_text(cfg)}", "PUT", f"/config/{seg(s)}", _config_body(cfg)
                )
            )
    for s, mode in sorted(source.subject_modes.items()):
        if target.subject_modes.get(s) != mode:
            plan.calls.append(
                Call(
                    "mode",
                    f"set mode of {s!r}: {mode}",
                    "PUT",
                    f"/mode/{seg(s)}",
                    {"mode": mode},
                    {"force": True} if mode == "IMPORT" else None,
                )
            )
    final = source.mode or target.mode
    if final is not None and (switch or final != target.mode):
        plan.calls.append(
            Call(
                "mode",
                f"set global mode {final}",
                "PUT",
                "/mode",
                {"mode": final},
                {"force": True} if final == "IMPORT" else None,
            )
        )
    return plan


def _config_body(cfg: dict[str, Any]) -> dict[str, Any]:
    """A GET /config answer as a PUT body: ``compatibilityLevel`` is written ``compatibility``."""
    body = {k: v for k, v in cfg.items() if k != "compatibilityLevel" and v is not None}
    if cfg.get("compatibilityLevel") is not None:
        body["compatibility"] = cfg["compatibilityLevel"]
    return body


def _config_text(cfg: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in cfg.items())


class Restorer:
    """Runs a plan's calls against ``client`` in order, reporting each to ``progress``."""

    def __init__(self, client: RegistryClient, progress: Progress | None = None) -> None:
        self.client = client
        self.progress = progress or NoProgress()

    def apply(self, plan: Plan) -> None:
        from serdes import RegistryError

        self.progress.start("importing", len(plan.calls))
        switched = False
        try:
            for call in plan.calls:
                try:
                    answer = self.client.request(call.method, call.path, call.body, call.params)
                except RegistryError as e:
                    left = (
                        (
                            " The target is left in IMPORT mode: fix the cause and run the import again with "
                            "--force to go on from here."
                        )
                        if switched
                        else ""
                    )
                    raise RestoreError(f"{call.description}: {e}.{left}") from None
                if call.expect_id is not None and (not isinstance(answer, dict) or answer.get("id") != call.expect_id):
                    raise RestoreError(
                        f"{call.description}: the registry answered {answer!r}, not id "
                        f"{call.expect_id}; is it really in IMPORT mode?"
                    )
                if call.kind == "mode" and call.path == "/mode":
                    switched = call.body["mode"] == "IMPORT"
                self.progress.advance()
        finally:
            self.progress.finish()
