"""Options of ``schemakit serve`` that an environment variable named after them sets too: ``--store-timeout-ms``
is ``SCHEMAKIT_STORE_TIMEOUT_MS``, and the option's help says so."""

from __future__ import annotations

import argparse
import os
from typing import Any


def env_name(flag: str) -> str:
    """``--max-schema-bytes`` -> ``SCHEMAKIT_MAX_SCHEMA_BYTES``."""
    return "SCHEMAKIT_" + flag[2:].upper().replace("-", "_")


def add_env_option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, flag: str, default: Any, help: str, **kwargs: Any
) -> None:
    """``flag``, defaulting to its environment variable when that is set, else to ``default``. A value from the
    environment is a string, which argparse passes through ``type`` as it would a command-line value."""
    env = env_name(flag)
    parser.add_argument(flag, default=os.environ.get(env, default), help=f"{help} [env {env}]", **kwargs)
