"""``schemakit registry …``: an admin client for any Confluent-compatible registry, over its public API.

Exit status: 0 done (``check``: compatible), 1 ``check`` found the schema incompatible, 2 anything failed (the
registry's error is printed with its HTTP status and Confluent error code).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from registry.modes import Mode
from schemakit.compat_cmd import add_level_option
from schemakit.connection import UsageError, add_connection_options, connect, seg
from schemakit.output import add_output_options, error, guarded, key_values, pretty_schema, print_json, table
from schemakit.schema_files import SCHEMA_TYPES, SchemaFileError, read_text, type_of

if TYPE_CHECKING:
    from serdes import RegistryClient, Schema

MODES = tuple(mode.value for mode in Mode)

EPILOG = """\
examples:
  schemakit registry --url http://localhost:8081 subjects
  schemakit registry get orders-value 3
  schemakit registry register order.avsc --subject orders-value
  schemakit registry check order.avsc --subject orders-value      # exit 1 if incompatible
  schemakit registry diff orders-value 2 3
  schemakit registry config orders-value --set FULL
  schemakit registry export --out backup/
  schemakit registry import --url http://new:8081 --in backup/ --dry-run
  schemakit registry copy --from http://old:8081 --to http://new:8081

The connection options go before or after the command; SCHEMAKIT_REGISTRY_URL, SCHEMAKIT_REGISTRY_USER and
SCHEMAKIT_REGISTRY_TOKEN set them from the environment. Exit status: 0 done (check: compatible), 1 check:
incompatible, 2 an error."""


def add_parser(sub: Any) -> None:
    reg = sub.add_parser(
        "registry",
        help="administer a registry (Confluent API): subjects, schemas, export/import",
        description="Administer a schema registry through its Confluent REST API (schemakit, "
        "Confluent Schema Registry, Karapace).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_connection_options(reg)
    add_output_options(reg)
    cmds = reg.add_subparsers(dest="registry_command", required=True, metavar="COMMAND")

    def command(name: str, help: str, handler: Any, *, connection: bool = True) -> argparse.ArgumentParser:
        p = cmds.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".")
        if connection:
            add_connection_options(p, suppress=True)
        add_output_options(p, suppress=True)
        p.set_defaults(handler=guarded(handler, lambda a: f"registry {a.registry_command}", _expected_errors))
        return p

    p = command("subjects", "list subjects", cmd_subjects)
    p.add_argument("--prefix", help="only subjects starting with this")
    p.add_argument("--deleted", action="store_true", help="include soft-deleted subjects (marked in the table)")

    p = command("versions", "list a subject's versions with their ids, types and deletion state", cmd_versions)
    p.add_argument("subject")
    p.add_argument("--deleted", action="store_true", help="include soft-deleted versions")

    p = command("get", "show a schema: a subject's version (default latest) or --id", cmd_get)
    p.add_argument("subject", nargs="?")
    p.add_argument("version", nargs="?", default="latest", help="a version number or latest (default)")
    p.add_argument("--id", type=int, help="the schema with this global id instead of a subject's version")
    p.add_argument("--deleted", action="store_true", help="find soft-deleted versions too")
    p.add_argument("--schema-only", action="store_true", help="print only the schema text, as stored")

    p = command("register", "register a schema file under a subject", cmd_register)
    _schema_file_options(p)
    p.add_argument("--normalize", action="store_true", help="normalize the schema before registering")

    p = command("check", "check a schema file's compatibility with a subject (exit 0 compatible, 1 not)", cmd_check)
    _schema_file_options(p)
    p.add_argument(
        "--version",
        default=None,
        help="check against this version only (default: the versions the subject's level selects)",
    )

    p = command("diff", "show what changed between two versions and at which levels V2 may follow V1", cmd_diff)
    p.add_argument("subject")
    p.add_argument("v1", help="the earlier version (a number or latest)")
    p.add_argument("v2", help="the later version")
    p.add_argument("--context", type=int, default=3, help="lines of context around changes (default 3)")

    p = command("config", "show or change the compatibility config (global, or a subject's)", cmd_config)
    p.add_argument("subject", nargs="?", help="a subject (default: the global config)")
    g = p.add_mutually_exclusive_group()
    add_level_option(g, "--set", "set the compatibility level", dest="level")
    g.add_argument("--delete", action="store_true", help="delete the subject's config (the global one applies)")

    p = command("mode", "show or change the mode (global, or a subject's)", cmd_mode)
    p.add_argument("subject", nargs="?", help="a subject (default: the global mode)")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--set", dest="mode", type=str.upper, choices=MODES, metavar="MODE", help=f"set the mode: {', '.join(MODES)}"
    )
    g.add_argument("--delete", action="store_true", help="delete the subject's mode (the global one applies)")
    p.add_argument("--force", action="store_true", help="with --set IMPORT: even if subjects exist")

    p = command("delete", "delete a subject or one version (soft; --permanent: hard)", cmd_delete)
    p.add_argument("subject")
    p.add_argument("version", nargs="?", help="one version (a number or latest); default: the whole subject")
    p.add_argument(
        "--permanent",
        action="store_true",
        help="hard delete (soft-deletes first when needed): ids and versions are gone for good",
    )

    from schemakit import transfer_cmd

    transfer_cmd.add_commands(command)


def _schema_file_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, help="the schema file (.avsc, .json, .proto)")
    p.add_argument("--subject", "-s", required=True)
    p.add_argument(
        "--type",
        choices=SCHEMA_TYPES,
        type=str.upper,
        help="schema type (default: from the extension: .avsc AVRO, .proto PROTOBUF, .json JSON)",
    )
    p.add_argument(
        "--reference",
        action="append",
        default=[],
        metavar="NAME=SUBJECT:VERSION",
        help="a registered schema this one references (Avro full name, JSON $ref or Protobuf import "
        "path = subject:version or subject:latest); repeat for several",
    )


def _expected_errors() -> tuple[type[Exception], ...]:
    """What a registry command reports as one line: the registry's answers, bad arguments, unreadable files."""
    from serdes import RegistryError

    return (RegistryError, UsageError, SchemaFileError)


# ---- commands ----------------------------------------------------------------------------------------------


def cmd_subjects(args: argparse.Namespace) -> int:
    with connect(args) as client:
        names = client.get_subjects(args.prefix, deleted=args.deleted)
        if args.output == "json":
            print_json(names)
        elif args.deleted:
            live = set(client.get_subjects(args.prefix))
            for n in names:
                print(n if n in live else f"{n}  (deleted)")
        else:
            for n in names:
                print(n)
    return 0


def cmd_versions(args: argparse.Namespace) -> int:
    from serdes import RegistryError

    with connect(args) as client:
        numbers = client.get_versions(args.subject, deleted=args.deleted)
        try:
            live = set(client.get_versions(args.subject)) if args.deleted else set(numbers)
        except RegistryError as e:  # every version soft-deleted: the live list is a 40401
            if e.error_code != 40401:
                raise
            live = set()
        rows = []
        for n in numbers:
            found = client.get_version(args.subject, n, deleted=n not in live)
            rows.append(
                {"version": n, "id": found.schema_id, "schemaType": found.schema.schema_type, "deleted": n not in live}
            )
    if args.output == "json":
        print_json(rows)
    else:
        print(
            table(
                [(r["version"], r["id"], r["schemaType"], "deleted" if r["deleted"] else "") for r in rows],
                ("VERSION", "ID", "TYPE", "STATE"),
            )
        )
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    if (args.id is None) == (args.subject is None):
        raise UsageError("give a SUBJECT [VERSION] or --id ID")
    with connect(args) as client:
        if args.id is not None:
            body = client.request("GET", f"/schemas/ids/{args.id}")
            body = {"id": args.id, **body}
        else:
            body = client.request(
                "GET",
                f"/subjects/{seg(args.subject)}/versions/{seg(args.version)}",
                params={"deleted": args.deleted or None},
            )
    if args.schema_only:
        print(body["schema"])
    elif args.output == "json":
        print_json(body)
    else:
        schema_type = body.get("schemaType") or "AVRO"
        rows: list[tuple[str, Any]] = [(k, body[k]) for k in ("subject", "version", "id") if k in body]
        rows.append(("type", schema_type))
        rows += [
            ("reference", f"{r['name']} -> {r['subject']} version {r['version']}") for r in body.get("references") or ()
        ]
        for k in ("metadata", "ruleSet"):
            if body.get(k):
                rows.append((k, _compact(body[k])))
        print(key_values(rows))
        print()
        print(pretty_schema(schema_type, body["schema"]))
    return 0


def _compact(obj: Any) -> str:
    import json

    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _schema_from_file(args: argparse.Namespace, client: RegistryClient) -> Schema:
    """The schema in ``args.file``: text, type, and ``--reference`` resolved to versions."""
    from serdes import Schema, SchemaReference

    refs = []
    for spec in args.reference:
        name, sep, rest = spec.partition("=")
        subject, colon, version = rest.rpartition(":")
        if not sep or not colon or not name or not subject:
            raise UsageError(f"--reference takes NAME=SUBJECT:VERSION, got {spec!r}")
        if version == "latest":
            number = client.get_latest_version(subject).version
        elif version.isdigit():
            number = int(version)
        else:
            raise UsageError(f"--reference {spec!r}: the version must be a number or latest")
        refs.append(SchemaReference(name, subject, number))
    return Schema(read_text(args.file), type_of(args.file, args.type), tuple(refs))


def cmd_register(args: argparse.Namespace) -> int:
    with connect(args) as client:
        registered = client.register_full(args.subject, _schema_from_file(args, client), args.normalize)
    result = {"subject": args.subject, "version": registered.version, "id": registered.schema_id}
    if args.output == "json":
        print_json(result)
    elif not args.quiet:
        print(f"registered {args.subject} version {registered.version}, id {registered.schema_id}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from serdes import RegistryError

    with connect(args) as client:
        body = _schema_from_file(args, client).to_json()
        path = f"/compatibility/subjects/{seg(args.subject)}/versions"
        if args.version is not None:
            path += f"/{seg(args.version)}"
        try:
            answer = client.request("POST", path, body, params={"verbose": True})
        except RegistryError as e:
            if e.error_code != 40401 or args.version is not None:
                raise
            # Confluent answers 40401 for a subject with no versions yet: any schema may be its first version.
            answer = {"is_compatible": True, "messages": []}
            error(f"registry {args.registry_command}", f"note: subject {args.subject!r} has no versions yet")
    compatible = bool(answer.get("is_compatible"))
    if args.output == "json":
        print_json(answer)
    elif compatible:
        print(f"compatible: {args.file} can be registered under {args.subject}")
    else:
        print(f"incompatible: {args.file} cannot be registered under {args.subject}:")
        for m in answer.get("messages") or []:
            print(f"  {m}")
    return 0 if compatible else 1


def cmd_diff(args: argparse.Namespace) -> int:
    from schemakit.schema_diff import diff_versions

    with connect(args) as client:
        try:
            result = diff_versions(client, args.subject, args.v1, args.v2, args.context)
        except ValueError as e:
            raise UsageError(str(e)) from None
    levels = result.pop("levels")
    if args.output == "json":
        print_json({**result, "levels": {v.level: v.to_json() for v in levels}})
        return 0
    print("\n".join(result["diff"]) if result["diff"] else "(the two schema texts are the same)")
    if result["changes"] is not None:
        print()
        print("changes (Confluent's kinds): " + (", ".join(result["changes"]) or "none"))
    print()
    old, new = result["old"]["version"], result["new"]["version"]
    print(f"can version {new} follow version {old}?")
    print(
        table(
            [(v.level, "yes" if v.is_compatible else "no", "; ".join(v.reasons)) for v in levels],
            ("LEVEL", "COMPATIBLE", "WHY NOT"),
        )
    )
    return 0


def _settings(args: argparse.Namespace, root: str, key: str, new_value: Any, force: bool = False) -> int:
    """``config`` and ``mode``: GET, PUT or DELETE on ``/<root>`` or ``/<root>/<subject>``."""
    path = f"/{root}/{seg(args.subject)}" if args.subject else f"/{root}"
    with connect(args) as client:
        if args.delete:
            if not args.subject:
                raise UsageError(f"--delete needs a SUBJECT (the global {root} is set, not deleted)")
            answer = client.request("DELETE", path)
        elif new_value is not None:
            answer = client.request("PUT", path, {key: new_value}, params={"force": True} if force else None)
        else:
            answer = client.request("GET", path, params={"defaultToGlobal": True} if args.subject else None)
    if args.output == "json":
        print_json(answer)
    elif not args.quiet:
        print(key_values(list(answer.items())))
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    return _settings(args, "config", "compatibility", args.level)


def cmd_mode(args: argparse.Namespace) -> int:
    return _settings(args, "mode", "mode", args.mode, force=args.force)


def cmd_delete(args: argparse.Namespace) -> int:
    from serdes import RegistryError

    path = f"/subjects/{seg(args.subject)}"
    if args.version is not None:
        path += f"/versions/{seg(args.version)}"
    with connect(args) as client:
        try:
            answer = client.request("DELETE", path)
        except RegistryError as e:
            # Already soft-deleted: fine when the hard delete comes next.
            if not (args.permanent and e.error_code in (40404, 40406)):
                raise
            answer = None
        if args.permanent:
            if args.version == "latest" and isinstance(answer, int):
                path = f"/subjects/{seg(args.subject)}/versions/{answer}"  # "latest" moved with the soft delete
            answer = client.request("DELETE", path, params={"permanent": True})
    if args.output == "json":
        print_json(answer)
    elif not args.quiet:
        kind = "permanently deleted" if args.permanent else "soft-deleted"
        what = f"versions {', '.join(map(str, answer))}" if isinstance(answer, list) else f"version {answer}"
        print(f"{kind} {args.subject} {what}")
    return 0
