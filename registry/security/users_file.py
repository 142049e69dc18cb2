"""The users file (``--users-file``): users with password hashes, and permissions. Karapace's auth file is one.

    {
      "users": [
        {"username": "alice", "password_hash": "$argon2id$v=19$...", "roles": ["producers"]},
        {"username": "admin", "algorithm": "scrypt", "salt": "...", "password_hash": "..."}
      ],
      "permissions": [
        {"username": "admin", "operation": "Write", "resource": ".*"},
        {"role": "producers", "operation": "Write", "resource": "Subject:orders-.*"}
      ]
    }

Karapace's file (``registry_authfile``: users with ``algorithm``/``salt``/``password_hash``, permissions with
``username``/``operation``/``resource``) is read unchanged; schemakit adds argon2/bcrypt hashes, ``roles`` on users
and ``role`` (instead of ``username``) on permissions. A file with ``permissions`` and no ``users`` gives
permissions to principals authenticated otherwise (bearer tokens, client certificates).

``UsersFileWatcher`` reloads the file when it changes (checked every second, so a replaced file or a Kubernetes
ConfigMap swap is seen too); a file that no longer loads is reported and the previous contents stay in force.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from registry.security.passwords import StoredPassword, parse_stored
from registry.security.permissions import Operation, Rule

log = logging.getLogger(__name__)


class UsersFileError(ValueError):
    """The file cannot be used; the message names the file and the entry."""


@dataclass(frozen=True, slots=True)
class User:
    username: str
    password: StoredPassword
    roles: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class UsersFile:
    users: Mapping[str, User]
    #: None when the file has no ``permissions`` key: then every authenticated principal may do everything
    permissions: tuple[Rule, ...] | None


def parse(data: object, source: str = "users file") -> UsersFile:
    """A users file from its decoded JSON; UsersFileError names the first bad entry."""
    if not isinstance(data, dict):
        raise UsersFileError(f"{source}: expected a JSON object with 'users' and 'permissions'")
    unknown = set(data) - {"users", "permissions"}
    if unknown:
        raise UsersFileError(f"{source}: unknown keys {sorted(unknown)} (expected 'users' and 'permissions')")
    users: dict[str, User] = {}
    for i, entry in enumerate(_list(data, "users", source)):
        where = f"{source}: users[{i}]"
        name = _str(entry, "username", where)
        if name in users:
            raise UsersFileError(f"{where}: user {name!r} is listed twice")
        try:
            stored = parse_stored(
                _str(entry, "password_hash", where), _opt_str(entry, "algorithm", where), _opt_str(entry, "salt", where)
            )
        except ValueError as e:
            raise UsersFileError(f"{where} ({name}): {e}") from None
        users[name] = User(name, stored, frozenset(_str_list(entry, "roles", where)))
    permissions: list[Rule] | None = None
    if "permissions" in data:
        permissions = []
        for i, entry in enumerate(_list(data, "permissions", source)):
            permissions.append(_rule(entry, f"{source}: permissions[{i}]"))
    return UsersFile(users, None if permissions is None else tuple(permissions))


def load(path: str) -> UsersFile:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise UsersFileError(f"cannot read the users file {path}: {e.strerror or e}") from None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise UsersFileError(f"{path}: not valid JSON: {e}") from None
    return parse(data, path)


def _rule(entry: object, where: str) -> Rule:
    if not isinstance(entry, dict):
        raise UsersFileError(f"{where}: expected an object")
    username = _opt_str(entry, "username", where)
    role = _opt_str(entry, "role", where)
    if (username is None) == (role is None):
        raise UsersFileError(f"{where}: give exactly one of 'username' and 'role'")
    op_text = _str(entry, "operation", where)
    try:
        operation = Operation(op_text)
    except ValueError:
        raise UsersFileError(f"{where}: operation must be 'Read' or 'Write', got {op_text!r}") from None
    try:
        return Rule(operation, _str(entry, "resource", where), username=username, role=role)
    except ValueError as e:
        raise UsersFileError(f"{where}: resource: {e}") from None


def _list(data: dict[str, Any], key: str, where: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise UsersFileError(f"{where}: '{key}' must be a list")
    return value


def _str(entry: object, key: str, where: str) -> str:
    if not isinstance(entry, dict):
        raise UsersFileError(f"{where}: expected an object")
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise UsersFileError(f"{where}: '{key}' must be a non-empty string")
    return value


def _opt_str(entry: dict[str, Any], key: str, where: str) -> str | None:
    return None if entry.get(key) is None else _str(entry, key, where)


def _str_list(entry: dict[str, Any], key: str, where: str) -> list[str]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise UsersFileError(f"{where}: '{key}' must be a list of non-empty strings")
    return value


class UsersFileListener(Protocol):
    def users_file_loaded(self, contents: UsersFile) -> None: ...


class UsersFileWatcher:
    """Loads the file now, then again whenever its size, mtime or inode change (polled every ``interval`` s)."""

    def __init__(self, path: str, listener: UsersFileListener, *, interval: float = 1.0) -> None:
        self.path = path
        self.listener = listener
        self.interval = interval
        self._stamp = self._stat()
        self.contents = load(path)
        self._task: asyncio.Task[None] | None = None

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def describe(self) -> str:
        c = self.contents
        rules = "no permissions (every authenticated caller may do everything)"
        if c.permissions is not None:
            rules = f"{len(c.permissions)} permission rules"
        return f"{self.path}: {len(c.users)} users, {rules}"

    def start(self) -> None:
        self.listener.users_file_loaded(self.contents)
        self._task = asyncio.get_running_loop().create_task(self._watch())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.check()

    def check(self) -> bool:
        """Reload if the file changed; True when new contents are in force."""
        stamp = self._stat()
        if stamp == self._stamp or stamp is None:
            return False
        self._stamp = stamp
        try:
            contents = load(self.path)
        except UsersFileError as e:
            log.warning("users file changed but cannot be loaded, keeping the previous one: %s", e)
            return False
        self.contents = contents
        self.listener.users_file_loaded(contents)
        log.info("users file reloaded: %s", self.describe())
        return True
