"""``schemakit registry export | import | copy``: a registry's contents to files and back, ids and versions kept.

``export`` reads everything through the public API (``snapshot.RegistryReader``) and writes a directory;
``import`` reads it back, plans the calls against what the target holds (``restore.plan_restore``) and
registers in IMPORT mode; ``copy`` does both without the directory.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemakit.connection import UsageError, add_connection_options, connect
from schemakit.output import error, print_json
from schemakit.progress import progress_for

if TYPE_CHECKING:
    from schemakit.restore import Plan
    from schemakit.snapshot import Snapshot
    from serdes import RegistryClient

EXIT_REFUSED = 2


def add_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    p = command(
        "export",
        "write every subject, version, id, deletion state, config, mode, metadata and rule set to a directory",
        cmd_export,
    )
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="a new or empty directory")
    _jobs(p)

    p = command(
        "import", "restore an export into an empty registry, with the same ids and versions (IMPORT mode)", cmd_import
    )
    p.add_argument("--in", dest="source_dir", type=Path, required=True, metavar="DIR", help="an export directory")
    _restore_options(p)

    p = command(
        "copy", "copy one registry's contents into another (export + import, no files)", cmd_copy, connection=False
    )
    add_connection_options(p, url_flag="--from", role="source")
    add_connection_options(p, url_flag="--to", prefix="to-", role="target")
    _restore_options(p)
    _jobs(p)


def _restore_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="print what would change and change nothing")
    p.add_argument(
        "--force",
        action="store_true",
        help="import into a registry that is not empty: versions it has with the same id and schema "
        "are skipped, any other clash stops the import before it writes",
    )


def _jobs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, default=8, help="requests in flight while reading (default 8)")


def cmd_export(args: argparse.Namespace) -> int:
    from schemakit.snapshot import RegistryReader, SnapshotError, check_out_dir, write_dir

    progress = progress_for(args.quiet)
    try:
        check_out_dir(args.out)  # before the long read, not after
        with connect(args) as client:
            snap = RegistryReader(client, progress, args.jobs).read()
        write_dir(snap, args.out, progress)
    except (SnapshotError, OSError) as e:
        raise UsageError(str(e)) from None
    counts = snap.counts()
    if args.output == "json":
        print_json({"out": str(args.out), **counts})
    elif not args.quiet:
        print(
            f"exported {counts['versions']} schema versions ({counts['deleted_versions']} soft-deleted, "
            f"{counts['ids']} ids) of {counts['subjects']} subjects to {args.out}"
        )
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from schemakit.snapshot import SnapshotError, read_dir

    try:
        source = read_dir(args.source_dir)
    except SnapshotError as e:
        raise UsageError(str(e)) from None
    with connect(args) as target:
        return _restore(args, source, target, "import")


def cmd_copy(args: argparse.Namespace) -> int:
    from schemakit.snapshot import RegistryReader

    with connect(args, url_flag="--from") as source_client:
        source = RegistryReader(source_client, progress_for(args.quiet), args.jobs).read()
    with connect(args, prefix="to_", url_flag="--to") as target:
        return _restore(args, source, target, "copy")


def _restore(args: argparse.Namespace, source: Snapshot, client: RegistryClient, name: str) -> int:
    from schemakit.restore import RestoreError, Restorer, non_empty_message, plan_restore
    from schemakit.snapshot import RegistryReader

    target = RegistryReader(client, progress_for(args.quiet), getattr(args, "jobs", 8)).read()
    refusal = None if args.force else non_empty_message(target, client.urls[0])
    if refusal:
        error(f"registry {name}", refusal)
        return EXIT_REFUSED
    plan = plan_restore(source, target)
    if plan.conflicts:
        error(f"registry {name}", f"nothing was changed: {len(plan.conflicts)} clashes with what the target holds:")
        for c in plan.conflicts:
            error(f"registry {name}", f"  {c}")
        return EXIT_REFUSED
    if args.dry_run:
        _print_plan(args, plan, dry_run=True)
        return 0
    try:
        Restorer(client, progress_for(args.quiet)).apply(plan)
    except RestoreError as e:
        error(f"registry {name}", str(e))
        return 2
    _print_plan(args, plan, dry_run=False)
    return 0


def _print_plan(args: argparse.Namespace, plan: Plan, *, dry_run: bool) -> None:
    if args.output == "json":
        out: dict[str, Any] = {
            "dry_run": dry_run,
            "unchanged": plan.unchanged,
            "calls": [c.to_json() for c in plan.calls],
        }
        print_json(out)
        return
    if dry_run:
        for c in plan.calls:
            print(f"would {c.description}")
        print(f"dry run, nothing changed: would {plan.summary()}")
    elif not args.quiet:
        print(f"done: {plan.summary()}")
