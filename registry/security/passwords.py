"""Password hashes: argon2 and bcrypt (schemakit's own users), and Karapace's salted hashes, read as they are.

Karapace (``karapace.core.auth``) stores ``algorithm``, ``salt`` and ``password_hash`` per user, where the hash is
base64 of PBKDF2-HMAC with the algorithm (``sha1``, ``sha256``, ``sha512``), the UTF-8 password and the UTF-8 salt,
5,000 iterations, or of ``scrypt`` (n=16384, r=8, p=1, 64 bytes). argon2 (``$argon2id$…``) and bcrypt
(``$2b$…``) hashes carry their own salt and cost, so such users need no ``algorithm`` or ``salt``.

Every verification costs tens of milliseconds by design: callers run it off the event loop and cache the outcome
(``authenticator.py``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass, field
from typing import Any

#: Karapace's algorithms (``HashAlgorithm``), with its parameters
KARAPACE_ALGORITHMS = ("sha1", "sha256", "sha512", "scrypt")
#: hashes ``hash_password`` makes (``schemakit hash-password --algorithm``)
SCHEMES = ("argon2", "bcrypt", *KARAPACE_ALGORITHMS)
_PBKDF2_ITERATIONS = 5000
_BCRYPT_PREFIXES = ("$2a$", "$2b$", "$2y$")
AUTH_EXTRA = "pip install 'schemakit[auth]'"


class MissingExtraError(ValueError):
    """An optional package for authentication is not installed (the message names the extra)."""


@dataclass(frozen=True, slots=True)
class StoredPassword:
    """One user's stored hash: ``algorithm`` is ``argon2``/``bcrypt`` (read from the hash) or Karapace's."""

    algorithm: str
    password_hash: str = field(repr=False)
    salt: str = field(default="", repr=False)


def parse_stored(password_hash: str, algorithm: str | None, salt: str | None) -> StoredPassword:
    """The stored password of a users-file entry; ValueError names what is wrong."""
    if password_hash.startswith("$argon2"):
        _argon2()  # a missing extra is reported when the file is loaded, not at the first login
        return StoredPassword("argon2", password_hash)
    if password_hash.startswith(_BCRYPT_PREFIXES):
        _bcrypt()
        return StoredPassword("bcrypt", password_hash)
    if algorithm is None:
        raise ValueError(
            "password_hash is neither an argon2 ($argon2id$...) nor a bcrypt ($2b$...) hash, and no 'algorithm' "
            f"is given (Karapace's: {', '.join(KARAPACE_ALGORITHMS)})"
        )
    if algorithm not in KARAPACE_ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r} (Karapace's: {', '.join(KARAPACE_ALGORITHMS)})")
    if salt is None:
        raise ValueError(f"algorithm {algorithm!r} needs a 'salt'")
    return StoredPassword(algorithm, password_hash, salt)


def karapace_hash(algorithm: str, salt: str, password: str) -> str:
    """Karapace's ``hash_password``: the base64 text its auth file stores."""
    pw, s = password.encode(), salt.encode()
    if algorithm == "scrypt":
        digest = hashlib.scrypt(pw, salt=s, n=16384, r=8, p=1)
    else:
        digest = hashlib.pbkdf2_hmac(algorithm, pw, s, _PBKDF2_ITERATIONS)
    return base64.b64encode(digest).decode("ascii")


def verify(stored: StoredPassword, password: str) -> bool:
    """Does ``password`` match? Slow on purpose; never raises for a wrong password."""
    if stored.algorithm == "argon2":
        hasher = _argon2()
        try:
            return bool(hasher.verify(stored.password_hash, password))
        except Exception:  # VerifyMismatchError, InvalidHashError: no match either way
            return False
    if stored.algorithm == "bcrypt":
        try:
            return bool(_bcrypt().checkpw(password.encode(), stored.password_hash.encode()))
        except ValueError:
            return False
    return hmac.compare_digest(stored.password_hash, karapace_hash(stored.algorithm, stored.salt, password))


def hash_password(password: str, algorithm: str = "argon2", salt: str | None = None) -> StoredPassword:
    """A new stored password (a random salt where the scheme takes one)."""
    if algorithm == "argon2":
        return StoredPassword("argon2", _argon2().hash(password))
    if algorithm == "bcrypt":
        bcrypt = _bcrypt()
        return StoredPassword("bcrypt", bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode("ascii"))
    if algorithm not in KARAPACE_ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r} (one of {', '.join(SCHEMES)})")
    import secrets

    salt = salt or secrets.token_urlsafe(16)
    return StoredPassword(algorithm, karapace_hash(algorithm, salt, password), salt)


def _argon2() -> Any:
    try:
        from argon2 import PasswordHasher
    except ImportError:
        raise MissingExtraError(f"argon2 password hashes need argon2-cffi: {AUTH_EXTRA}") from None
    return PasswordHasher()


def _bcrypt() -> Any:
    try:
        import bcrypt
    except ImportError:
        raise MissingExtraError(f"bcrypt password hashes need bcrypt: {AUTH_EXTRA}") from None
    return bcrypt
