"""The read cache's security guard (``SecurityGuard``) on its own, with a real users file, authenticator and
authorizer: what it admits from the decisions it keeps, and that those decisions stop holding the moment the
users file that changes them is loaded (the server-level test is ``test_users_file.py``'s
``test_cached_reads_follow_the_users_file_at_once``)."""

from __future__ import annotations

import asyncio
import base64

from registry.http.read_cache import SHARED, ReadTicket
from registry.http.security import AUTHENTICATED, SecurityGuard
from registry.security import Operation, Security, SecurityConfig, build_security
from registry.security.forwarded import FORWARDED_HEADER
from tests.support.credentials import UsersFile


def _basic(name: str, password: str) -> bytes:
    return b"Basic " + base64.b64encode(f"{name}:{password}".encode())


def _scope(authorization: bytes | None, *extra: tuple[bytes, bytes]) -> dict[str, object]:
    headers = [(b"host", b"registry"), *extra]
    if authorization is not None:
        headers.append((b"authorization", authorization))
    return {"type": "http", "headers": headers}


def _secured(users_file: UsersFile, **config: str) -> Security:
    security = build_security(SecurityConfig(auth=("basic",), users_file=users_file.save(), **config))
    assert security is not None and security.users is not None
    security.users_file_loaded(security.users.contents)  # what starting the watcher does first
    return security


def _authenticate(security: Security, authorization: bytes) -> None:
    """As the app does on a miss: the credential is verified once and remembered."""

    async def no_body() -> bytes:
        return b""

    asyncio.run(security.authenticator.authenticate(_scope(authorization), no_body))


def _reload(security: Security, users_file: UsersFile) -> None:
    users_file.save()
    assert security.users is not None and security.users.check()


def _ticket(subject: str) -> ReadTicket:
    return ReadTicket(cacheable=True, access=(Operation.READ, (f"Subject:{subject}",)))


def test_kept_decisions_follow_the_users_file(users_file: UsersFile) -> None:
    users_file.user("bob", "bob-pw").allow("bob", "Read", "Subject:team-")
    security = _secured(users_file)
    guard = SecurityGuard(security)
    bob = _basic("bob", "bob-pw")
    team, other = _ticket("team-a"), _ticket("other")
    assert guard.admit(_scope(bob), team, bob) is None  # never verified: the app authenticates
    _authenticate(security, bob)
    for _ in range(2):  # decided, then from the kept decision
        assert guard.admit(_scope(bob), team, bob) == SHARED
        assert guard.admit(_scope(bob), other, bob) is None  # no rule grants it
    assert guard.admit(_scope(None), team, None) is None  # no credentials at all
    # the rule taken away: the very next hit is refused
    users_file.permissions.clear()
    _reload(security, users_file)
    assert guard.admit(_scope(bob), team, bob) is None
    users_file.allow("bob", "Read", "Subject:team-")
    _reload(security, users_file)
    _authenticate(security, bob)
    assert guard.admit(_scope(bob), team, bob) == SHARED
    # a new password: the old credential is refused at once
    users_file.user("bob", "new-pw")
    _reload(security, users_file)
    assert guard.admit(_scope(bob), team, bob) is None
    new = _basic("bob", "new-pw")
    _authenticate(security, new)
    assert guard.admit(_scope(new), team, new) == SHARED
    # bob removed
    del users_file.users["bob"]
    _reload(security, users_file)
    assert guard.admit(_scope(new), team, new) is None


def test_per_caller_answers_and_answers_for_any_caller(users_file: UsersFile) -> None:
    users_file.user("bob", "bob-pw").allow("bob", "Read", "Subject:team-")
    security = _secured(users_file)
    guard = SecurityGuard(security)
    bob = _basic("bob", "bob-pw")
    _authenticate(security, bob)
    listing = ReadTicket(cacheable=True, access=AUTHENTICATED, partition="bob")
    partition = guard.admit(_scope(bob), listing, bob)
    assert partition is not None and partition != SHARED and partition.name == "bob"  # type: ignore[attr-defined]
    unmarked = ReadTicket(cacheable=True)  # an answer whose access nobody marked is the app's to give
    assert guard.admit(_scope(bob), unmarked, bob) is None


def test_forwarded_identities_are_left_to_the_app_when_they_can_be_signed(users_file: UsersFile) -> None:
    """With ``--inter-node-secret`` a forwarded request's signed identity wins over its ``Authorization``, which
    only the app checks; without one, the authenticator reads ``Authorization`` as for any request."""
    users_file.user("bob", "bob-pw").allow("bob", "Read", "Subject:team-")
    marked = (FORWARDED_HEADER, b"1")
    bob = _basic("bob", "bob-pw")
    team = _ticket("team-a")
    signing = _secured(users_file, inter_node_secret="cluster-secret")
    _authenticate(signing, bob)
    guard = SecurityGuard(signing)
    assert guard.admit(_scope(bob), team, bob) == SHARED
    assert guard.admit(_scope(bob, marked), team, bob) is None
    plain = _secured(users_file)
    _authenticate(plain, bob)
    assert SecurityGuard(plain).admit(_scope(bob, marked), team, bob) == SHARED


def test_kept_decisions_are_bounded(users_file: UsersFile) -> None:
    users_file.user("bob", "bob-pw").allow("bob", "Read", "Subject:team-")
    security = _secured(users_file)
    guard = SecurityGuard(security)
    guard.MAX_DECISIONS = 10
    bob = _basic("bob", "bob-pw")
    _authenticate(security, bob)
    tickets = [_ticket(f"team-{n}") for n in range(25)]
    for ticket in tickets:
        assert guard.admit(_scope(bob), ticket, bob) == SHARED
        assert guard._kept <= guard.MAX_DECISIONS
    assert all(guard.admit(_scope(bob), t, bob) == SHARED for t in tickets)
    assert guard.admit(_scope(bob), _ticket("other"), bob) is None
