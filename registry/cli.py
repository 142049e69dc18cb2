"""``schemakit serve`` (the registry's command line) and ``schemakit hash-password`` (an entry for its users
file). Every ``serve`` option can also come from an environment variable named after it (``registry/options.py``,
shown in --help). ``schemakit.cli`` hands both commands to ``main`` here; ``python -m registry serve`` works too."""

from __future__ import annotations

import argparse
import sys

from compat import CompatibilityLevel
from registry import logs
from registry.config import DEFAULTS, RegistryConfig
from registry.limits import Limits
from registry.options import add_env_option
from registry.security.config import add_arguments as add_security_arguments
from registry.security.config import from_arguments as security_from_arguments
from registry.security.passwords import SCHEMES


def _bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("true", "1", "yes", "on"):
        return True
    if t in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="schemakit", description="schemakit: schema registry and serdes toolkit")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the schema registry (Confluent REST API)")
    add_env_option(
        s,
        "--log",
        DEFAULTS.log_url,
        f"log URL: sqlite:///DIR (embedded, default {DEFAULTS.log_url}) or kafka://host:port[,host:port]",
    )
    add_env_option(s, "--host", DEFAULTS.host, "listen address")
    add_env_option(s, "--port", DEFAULTS.port, "listen port", type=int)
    add_env_option(s, "--topic", DEFAULTS.topic, "the store topic")
    add_env_option(s, "--advertised-url", None, "URL other instances use to reach this one")
    add_env_option(
        s, "--leader-eligible", DEFAULTS.leader_eligible, "may this instance become leader (true/false)", type=_bool
    )
    add_env_option(
        s,
        "--group-id",
        DEFAULTS.group_id,
        "Kafka only: the leader-election group; instances sharing a store topic must share it",
    )
    add_env_option(
        s,
        "--election-topic",
        None,
        "Kafka only: the one-partition topic where the leader announces itself (default: <topic>_leader)",
    )
    add_env_option(
        s,
        "--takeover-after-ms",
        round(DEFAULTS.takeover_after * 1000),
        "Kafka only: a follower replaces a leader whose address has refused connections this long (its process is "
        "gone) without waiting for the group's session timeout; 0: leave it to the group",
        type=int,
    )
    add_env_option(s, "--compatibility", DEFAULTS.compatibility, "default compatibility level")
    add_env_option(
        s, "--store-timeout-ms", round(DEFAULTS.store_timeout * 1000), "how long a write waits for the log", type=int
    )
    _add_limit_options(s)
    add_security_arguments(s)
    add_env_option(s, "--dek-topic", DEFAULTS.dek_topic, "the DEK registry's topic")
    add_env_option(
        s,
        "--dek-local-secret",
        None,
        "the secret from which shared local-kms KEKs derive their key (as confluent-kafka's LocalKmsDriver); "
        "prefer the environment variable to the command line",
    )
    add_env_option(
        s,
        "--protoc-timeout-ms",
        round(DEFAULTS.protoc_timeout * 1000),
        "how long compiling one Protobuf schema may take before it is refused with 42201",
        type=int,
    )
    add_env_option(s, "--log-level", "INFO", "logging level")
    add_env_option(
        s,
        "--log-format",
        DEFAULTS.log_format,
        "log lines as text, or as one JSON object per line (time, level, logger, message, extra fields)",
        choices=logs.FORMATS,
    )
    add_env_option(
        s,
        "--shutdown-timeout-ms",
        round(DEFAULTS.shutdown_timeout * 1000),
        "on SIGTERM, how long requests in flight may take to finish before they are cancelled",
        type=int,
    )
    h = sub.add_parser(
        "hash-password",
        help="hash a password for the users file (prints the user's JSON entry)",
        description="Reads the password from the terminal (twice) or, when stdin is not a terminal, from its first "
        "line, and prints the user's entry for --users-file.",
    )
    h.add_argument("--user", "-u", help="the user name to put in the entry")
    h.add_argument(
        "--algorithm",
        "-a",
        choices=SCHEMES,
        default="argon2",
        help="argon2 (default) or bcrypt; sha1, sha256, sha512, scrypt make Karapace-compatible entries",
    )
    h.add_argument("--salt", help="Karapace algorithms only: the salt (default: random)")
    return p


def hash_password_command(args: argparse.Namespace) -> int:
    import getpass
    import json

    from registry.security.passwords import MissingExtraError, hash_password

    if sys.stdin.isatty():
        password = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != password:
            print("schemakit: the passwords differ", file=sys.stderr)
            return 2
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        print("schemakit: empty password", file=sys.stderr)
        return 2
    try:
        stored = hash_password(password, args.algorithm, args.salt)
    except MissingExtraError as e:
        print(f"schemakit: {e}", file=sys.stderr)
        return 2
    entry: dict[str, str] = {"username": args.user} if args.user else {}
    if stored.salt:
        entry.update(algorithm=stored.algorithm, salt=stored.salt)
    entry["password_hash"] = stored.password_hash
    print(json.dumps(entry, indent=4))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "hash-password":
        return hash_password_command(args)
    logs.configure(str(args.log_level), args.log_format)
    if args.command == "serve":
        from registry.server import StartupError, serve

        try:
            level = CompatibilityLevel.parse(args.compatibility)
        except ValueError:
            print(f"schemakit: unknown compatibility level {args.compatibility!r}", file=sys.stderr)
            return 2
        config = RegistryConfig(
            log_url=args.log,
            host=args.host,
            port=args.port,
            topic=args.topic,
            advertised_url=args.advertised_url,
            leader_eligible=args.leader_eligible,
            compatibility=level,
            store_timeout=args.store_timeout_ms / 1000,
            group_id=args.group_id,
            election_topic=args.election_topic,
            limits=_limits(args),
            protoc_timeout=args.protoc_timeout_ms / 1000,
            takeover_after=args.takeover_after_ms / 1000,
            shutdown_timeout=args.shutdown_timeout_ms / 1000,
            log_format=args.log_format,
            security=security_from_arguments(args),
            dek_topic=args.dek_topic,
            dek_local_secret=args.dek_local_secret,
        )
        try:
            return serve(config)
        except StartupError as e:
            print(f"schemakit: cannot start: {e}", file=sys.stderr)
            return 2
    return 0


#: (option, Limits field, what it bounds, scale from the option's unit to the field's)
_LIMIT_OPTIONS = (
    ("--max-request-bytes", "max_request_bytes", "bytes of a request body (413 past it)", 1),
    ("--max-schema-bytes", "max_schema_bytes", "bytes of a schema (42201 past it)", 1),
    ("--max-schema-depth", "max_schema_depth", "nesting depth of a schema (42201 past it)", 1),
    ("--max-schema-references", "max_references", "subject-versions a new schema references, transitively", 1),
    ("--schema-workers", "schema_workers", "threads parsing and checking schemas", 1),
    ("--schema-queue", "schema_queue", "schema work waiting for a thread before 503s", 1),
    ("--header-timeout-ms", "header_timeout", "time a client may take to send request headers (408)", 1000),
    ("--body-timeout-ms", "body_timeout", "time a client may take to send a request body (408)", 1000),
    ("--response-cache-bytes", "response_cache_bytes", "bytes of cached read answers", 1),
    ("--parse-cache-bytes", "parse_cache_bytes", "bytes (estimated) of parsed schemas in each parse cache", 1),
)


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {n}")
    return n


def _add_limit_options(s: argparse.ArgumentParser) -> None:
    """One option (and environment variable) per field of ``Limits``; README has the same table."""
    for option, field, what, scale in _LIMIT_OPTIONS:
        default = round(getattr(DEFAULTS.limits, field) * scale)
        # a string default goes through ``type`` too
        add_env_option(s, option, str(default), f"{what} (default {default})", type=_positive)


def _limits(args: argparse.Namespace) -> Limits:
    values = {}
    for option, field, _what, scale in _LIMIT_OPTIONS:
        value = getattr(args, option[2:].replace("-", "_"))
        values[field] = value / scale if scale != 1 else value
    return Limits(**values)
