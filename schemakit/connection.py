"""Where a ``schemakit registry`` command connects: URL, credentials and TLS, as options and environment.

Options are accepted before and after the subcommand (``schemakit registry --url U subjects`` and
``schemakit registry subjects --url U``): the ``registry`` parser holds them with their defaults and every
subcommand holds them again with ``argparse.SUPPRESS``, so a value given after the subcommand wins and an
absent one leaves the first alone.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from serdes import RegistryClient


def seg(value: str | int) -> str:
    """One URL path segment (subjects may hold ``/``, ``%``, spaces)."""
    return quote(str(value), safe="")


class UsageError(Exception):
    """A command line that cannot work (a missing URL, a malformed option); exit status 2."""


#: (name, metavar, environment variable of the first registry's option, help), in --help order
_OPTIONS = (
    (
        "url",
        "URL",
        "SCHEMAKIT_REGISTRY_URL",
        "registry URL; several comma-separated for failover; http://user:pw@host sets basic auth",
    ),
    ("user", "USER:PASSWORD", "SCHEMAKIT_REGISTRY_USER", "HTTP basic auth"),
    ("token", "TOKEN", "SCHEMAKIT_REGISTRY_TOKEN", "bearer token, sent as 'Authorization: Bearer TOKEN'"),
    ("ca", "FILE", None, "CA bundle (PEM) to verify the registry's certificate"),
    ("cert", "FILE", None, "client certificate (PEM) for mutual TLS"),
    ("key", "FILE", None, "the client certificate's private key (PEM), when --cert does not hold it"),
)


def add_connection_options(
    p: argparse.ArgumentParser, *, suppress: bool = False, url_flag: str = "--url", prefix: str = "", role: str = ""
) -> None:
    """``--url``, ``--user``, ``--token``, ``--ca``/``--cert``/``--key``, ``--timeout``. With ``prefix``
    (``to-``) the options of a second registry: ``--to-user`` … (no environment variables for those)."""
    g = p.add_argument_group(f"the {role} registry" if role else "connection")
    for name, metavar, env, help in _OPTIONS:
        if env and not prefix:
            default = argparse.SUPPRESS if suppress else os.environ.get(env)
            help += f" [env {env}]"
        else:
            default = argparse.SUPPRESS if suppress else None
        flag = url_flag if name == "url" else f"--{prefix}{name}"
        g.add_argument(flag, dest=prefix.replace("-", "_") + name, metavar=metavar, default=default, help=help)
    if not prefix:
        g.add_argument(
            "--timeout",
            type=float,
            metavar="SECONDS",
            default=argparse.SUPPRESS if suppress else 30.0,
            help="seconds per request (default 30)",
        )


def connect(args: argparse.Namespace, *, prefix: str = "", url_flag: str = "--url") -> RegistryClient:
    """A ``RegistryClient`` for the registry the options name; ``prefix`` picks the second registry's options
    (``to_`` for ``--to-user`` …), which never fall back to the first's: credentials go where they are given."""
    from serdes import RegistryClient

    def opt(name: str) -> str | None:
        return getattr(args, f"{prefix}{name}", None)

    target = opt("url")
    if not target:
        raise UsageError(f"no registry URL: pass {url_flag} URL")
    user, token = opt("user"), opt("token")
    if user is not None and ":" not in user:
        raise UsageError(f"--{prefix.replace('_', '-')}user takes USER:PASSWORD")
    if user is not None and token is not None:
        raise UsageError("--user and --token are alternatives: pass one")
    cert, key = opt("cert"), opt("key")
    if key is not None and cert is None:
        raise UsageError("--key needs --cert")
    # A bearer token travels as a header the client sends with every request.
    headers = {"Authorization": f"Bearer {token}"} if token else None
    try:
        return RegistryClient(
            target,
            user_info=user,
            timeout=float(getattr(args, "timeout", 30.0)),
            max_retries=2,
            verify=opt("ca") or True,
            cert=(cert, key) if cert and key else cert,
            headers=headers,
        )
    except (ValueError, OSError) as e:
        raise UsageError(str(e)) from None
