"""The log a ``schemakit topic`` command works on: its options (``--log``, ``-X``, ``--log-config``,
``--timeout``), opening it through ``streams.log.open_log`` (the one parser of log URLs), and the error for a
topic it does not have. Shared by the admin commands (``topic_cmd.py``) and the console producer and consumer."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemakit.connection import UsageError

if TYPE_CHECKING:
    from streams.log import Log

__all__ = ["DEFAULT_LOG", "LOG_ENV", "add_log_options", "key_value_pairs", "missing_topic", "open_topic_log"]

#: what ``schemakit serve`` (``make run``) stores its data in when given no --log
DEFAULT_LOG = "sqlite:///./data"
LOG_ENV = "SCHEMAKIT_LOG"


def add_log_options(p: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """``--log``, ``-X``, ``--log-config``, ``--timeout``: before or after the subcommand (as ``registry``'s)."""
    g = p.add_argument_group("the log")

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    g.add_argument(
        "--log",
        metavar="URL",
        default=default(os.environ.get(LOG_ENV, DEFAULT_LOG)),
        help=f"sqlite:///DIR or kafka://host:port[,host:port][?setting=value] (default {DEFAULT_LOG}) [env {LOG_ENV}]",
    )
    g.add_argument(
        "-X",
        "--log-option",
        dest="log_options",
        action="append",
        metavar="KEY=VALUE",
        default=default([]),
        help="a librdkafka setting for a kafka:// log (sasl.mechanism=SCRAM-SHA-512, ssl.ca.location=…); repeatable",
    )
    g.add_argument(
        "--log-config",
        type=Path,
        metavar="FILE",
        default=default(None),
        help="librdkafka settings, one KEY=VALUE a line (# comments), as a Kafka client.properties file",
    )
    g.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        default=default(30.0),
        help="seconds a Kafka admin call or a registry request may take (default 30)",
    )


def key_value_pairs(specs: list[str], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option} takes KEY=VALUE, got {spec!r}")
        out[key.strip()] = value.strip()
    return out


def _log_config_file(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise UsageError(f"--log-config {path}: {e.strerror or e}") from None
    specs = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith(("#", "!"))]
    return key_value_pairs(specs, f"--log-config {path}")


def open_topic_log(args: argparse.Namespace) -> Log:
    """The log ``--log`` names, through ``streams.log.open_log`` (the one parser of log URLs), with the
    librdkafka settings of ``--log-config`` and ``-X`` (which win) for a Kafka log."""
    from streams.log import open_log

    options: dict[str, Any] = {**_log_config_file(args.log_config), **key_value_pairs(args.log_options, "-X")}
    url = args.log
    # Only the Kafka backend takes client settings and an admin timeout; SQLite answers from its file.
    if url.partition("://")[0] == "kafka":
        options["timeout"] = args.timeout
    elif options:
        raise UsageError(f"-X and --log-config are settings of a kafka:// log, not of {url!r}")
    try:
        return open_log(url, **options)
    except ValueError as e:
        raise UsageError(str(e)) from None


def missing_topic(log: Log, topic: str) -> Exception:
    from streams.log import UnknownTopicError

    return UnknownTopicError(f"topic {topic!r} does not exist in {log.safe_url}")
