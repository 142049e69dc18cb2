"""``schemakit compat check``: compatibility of schema files, no registry needed.

Parsing and checking are the registry's own (``registry/schema_types``, ``compat/``), so the verdict and the
messages are the ones the registry would answer for the same schemas registered as versions 1…n.
Exit status: 0 compatible, 1 incompatible (or the new schema is not a valid schema), 2 the check could not run.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compat import CompatibilityLevel
from schemakit.connection import UsageError
from schemakit.output import add_output_options, error, print_json
from schemakit.schema_files import EXTENSION_TYPES, SCHEMA_TYPES, SchemaFileError, SchemaLoader, type_of

if TYPE_CHECKING:
    from compat import Incompatibility

LEVELS = tuple(level.value for level in CompatibilityLevel)


def add_level_option(p: Any, flag: str, what: str, **kwargs: Any) -> None:
    """A compatibility-level option, in any case; its help lists the levels after ``what``, then the default."""
    default = f" (default {kwargs['default']})" if "default" in kwargs else ""
    p.add_argument(
        flag, type=str.upper, choices=LEVELS, metavar="LEVEL", help=f"{what}: {', '.join(LEVELS)}{default}", **kwargs
    )


DESCRIPTION = """\
Check that NEW can follow OLD (and the OLDER versions, for the _TRANSITIVE levels) at a compatibility level,
with the registry's own rules and messages, and no registry.

  schemakit compat check v2.avsc v3.avsc --level FULL
  schemakit compat check v3.avsc v4.avsc v2.avsc v1.avsc --level BACKWARD_TRANSITIVE
  schemakit compat check --against-dir /tmp/last-release/schemas schemas/

File mode: OLD is the latest version so far, NEW the candidate, OLDER… the versions before OLD, newest
first. Messages number the versions as the registry would: the oldest is version 1, OLD is the last.

Directory mode (--against-dir DIR [NEWDIR]): every schema file under DIR (.avsc, .json, .proto; hidden
directories skipped) is paired with the file at the same relative path under NEWDIR (default: the current
directory, i.e. the working tree), and NEW is checked against OLD from DIR. A file only in NEWDIR is new
(nothing to check); a file only in DIR is reported as removed. With one old version per file, a _TRANSITIVE
level checks the same as its plain level. Protobuf imports are resolved inside each tree (DIR for the old
files, NEWDIR for the new ones), as `protoc -I DIR` would.

Exit status: 0 compatible; 1 incompatible, or a new schema is not valid; 2 the check could not run (a
missing file, an old schema that does not parse, bad options)."""


def add_parser(sub: Any) -> None:
    compat = sub.add_parser(
        "compat",
        help="offline compatibility checks of schema files (for CI)",
        description="Offline compatibility checks: no registry needed.",
    )
    compat_sub = compat.add_subparsers(dest="compat_command", required=True, metavar="COMMAND")
    p = compat_sub.add_parser(
        "check",
        help="check schema files against earlier versions",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="OLD NEW [OLDER …]; with --against-dir: [NEWDIR]")
    p.add_argument(
        "--against-dir",
        metavar="DIR",
        type=Path,
        help="check every schema file of the current tree (or NEWDIR) against its namesake under DIR",
    )
    p.add_argument(
        "--type",
        choices=SCHEMA_TYPES,
        type=str.upper,
        help="schema type; default from the extension (.avsc AVRO, .proto PROTOBUF, .json JSON). "
        "With --against-dir types follow extensions and --type says what .json files hold",
    )
    add_level_option(p, "--level", "compatibility level", default="BACKWARD")
    p.add_argument(
        "--reference",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="a referenced schema: NAME is the Avro full name, JSON Schema $ref or Protobuf import "
        "path; repeat for several",
    )
    add_output_options(p)
    p.set_defaults(handler=run)


@dataclass
class Verdict:
    """The result of one check: the registry's verbose answer plus what people read."""

    is_compatible: bool
    messages: list[str] = field(default_factory=list)
    incompatibilities: list[Incompatibility] = field(default_factory=list)
    failed: Path | None = None  # the old file the new one failed against

    def answer(self) -> dict[str, Any]:
        """What ``POST /compatibility/…?verbose=true`` answers for the same schemas."""
        return {"is_compatible": self.is_compatible, "messages": self.messages}


def check_files(
    loader: SchemaLoader,
    schema_type: str,
    level: CompatibilityLevel,
    new: Path,
    previous: list[Path],
    old_loader: SchemaLoader | None = None,
) -> Verdict:
    """``new`` against ``previous`` (oldest first). Old files parse as stored schemas, the new one as a
    registration does (stricter); an invalid new schema is an incompatible verdict with the registry's 42201
    message, an invalid old one a ``SchemaFileError``."""
    from registry.schema_types import InvalidSchemaError, get_schema_type
    from registry.schema_types.compatibility import check_compatibility, compatibility_messages

    old_parsed = []
    for path in previous:
        try:
            old_parsed.append((old_loader or loader).parse(path, schema_type, stored=True))
        except InvalidSchemaError as e:
            raise SchemaFileError(f"{path}: {e.api_message(schema_type)}") from None
    try:
        parsed = loader.parse(new, schema_type)
    except InvalidSchemaError as e:
        return Verdict(False, [e.api_message(schema_type)])
    t = get_schema_type(schema_type)
    assert t is not None  # the loader has parsed with it
    result = check_compatibility(t, level, parsed, old_parsed)
    if not result.incompatibilities:
        return Verdict(True)
    index = result.failed_index or 0
    messages = compatibility_messages(
        result.incompatibilities, old_version=index + 1, old_schema=old_parsed[index].canonical, level=level
    )
    return Verdict(False, messages, list(result.incompatibilities), previous[index])


def run(args: argparse.Namespace) -> int:
    level = CompatibilityLevel.parse(args.level)
    try:
        if args.against_dir is not None:
            return _run_dirs(args, level)
        return _run_files(args, level)
    except (UsageError, SchemaFileError) as e:
        error("compat check", str(e))
        return 2


def _run_files(args: argparse.Namespace, level: CompatibilityLevel) -> int:
    from schemakit.schema_files import parse_reference_files

    if len(args.files) < 2:
        raise UsageError("give OLD NEW [OLDER …], or --against-dir DIR")
    old, new, *older = (Path(f) for f in args.files)
    schema_type = type_of(new, args.type)
    loader = SchemaLoader(parse_reference_files(args.reference, schema_type))
    previous = [*reversed(older), old]
    for path in (new, *previous):
        if not path.is_file():
            raise SchemaFileError(f"{path}: no such file")
    verdict = check_files(loader, schema_type, level, new, previous)
    if args.output == "json":
        print_json(verdict.answer())
    elif verdict.is_compatible:
        print(f"compatible: {new} can follow {old} at {level.value}")
    else:
        where = f" with {verdict.failed}" if verdict.failed else ""
        print(f"incompatible at {level.value}{where}:")
        for line in _reasons(verdict):
            print(f"  {line}")
    return 0 if verdict.is_compatible else 1


def _reasons(verdict: Verdict) -> list[str]:
    if verdict.incompatibilities:
        return [i.confluent_text() for i in verdict.incompatibilities]
    return verdict.messages


def _schema_files(root: Path) -> Iterator[Path]:
    """Schema files under ``root`` as paths relative to it, hidden directories skipped, sorted."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if Path(name).suffix.lower() in EXTENSION_TYPES:
                found.append((Path(dirpath) / name).relative_to(root))
    return iter(sorted(found))


def _run_dirs(args: argparse.Namespace, level: CompatibilityLevel) -> int:
    from schemakit.schema_files import parse_reference_files

    if len(args.files) > 1:
        raise UsageError("with --against-dir give at most one directory: NEWDIR (default: the current directory)")
    old_root: Path = args.against_dir
    new_root = Path(args.files[0]) if args.files else Path.cwd()
    for root in (old_root, new_root):
        if not root.is_dir():
            raise UsageError(f"{root}: not a directory")
    json_type = args.type or "JSON"
    refs = parse_reference_files(args.reference, json_type)
    old_loader, new_loader = SchemaLoader(refs, [old_root]), SchemaLoader(refs, [new_root])
    old_files, new_files = set(_schema_files(old_root)), set(_schema_files(new_root))
    rows: list[dict[str, Any]] = []
    for rel in sorted(old_files | new_files, key=str):
        row: dict[str, Any] = {"path": str(rel), "messages": []}
        rows.append(row)
        if rel not in old_files:
            row["status"] = "new"
            continue
        if rel not in new_files:
            row["status"] = "removed"
            continue
        try:
            verdict = check_files(
                new_loader, type_of(rel, None, json_type), level, new_root / rel, [old_root / rel], old_loader
            )
        except SchemaFileError as e:
            row.update(status="error", messages=[str(e)])
            continue
        row.update(status="compatible" if verdict.is_compatible else "incompatible", messages=verdict.messages)
        row["reasons"] = _reasons(verdict)
    counts = {
        s: sum(1 for r in rows if r["status"] == s) for s in ("compatible", "incompatible", "error", "new", "removed")
    }
    ok = counts["incompatible"] == 0 and counts["error"] == 0
    if args.output == "json":
        print_json(
            {
                "is_compatible": ok,
                "level": level.value,
                "files": [{k: v for k, v in r.items() if k != "reasons"} for r in rows],
            }
        )
    else:
        for r in rows:
            print(f"{r['status'].upper():<13} {r['path']}")
            for line in r.get("reasons", r["messages"]) if r["status"] in ("incompatible", "error") else ():
                print(f"  {line}")
        if not args.quiet:
            print(
                f"{counts['compatible'] + counts['incompatible'] + counts['error']} checked at {level.value}: "
                + ", ".join(f"{n} {s}" for s, n in counts.items())
            )
    if counts["error"]:
        return 2
    return 0 if ok else 1
