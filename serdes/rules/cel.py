"""CEL expressions for the ``CEL`` and ``CEL_FIELD`` rule types: compiled once per rule to a Python closure
(``cel_compiler``), evaluated by cel-python where the closure cannot be sure (``celpy``, the ``rules`` extra).

Values cross as plain Python values; ``to_cel`` / ``from_cel`` convert for cel-python the way confluent-kafka binds
them (a ``date`` is its day number, a ``UUID`` its text, ``datetime``/``timedelta`` CEL timestamps/durations).
Confluent's extension functions ``isEmail``, ``isHostname``, ``isIpv4``, ``isIpv6``, ``isUri``, ``isUriRef`` and
``isUuid`` are bound for cel-python.
"""

from __future__ import annotations

import datetime
import ipaddress
import threading
import uuid
from collections.abc import Callable
from email.utils import parseaddr
from typing import Any
from urllib.parse import urlparse

from serdes.rules.cel_compiler import Fallback, Unsupported, compile_cel
from serdes.rules.engines import require

_EPOCH_DAY = datetime.date(1970, 1, 1).toordinal()


def _celpy() -> Any:
    return require("celpy", "cel-python", "CEL")


# -- values ----------------------------------------------------------------------------------------------------


def to_cel(value: Any) -> Any:
    """A plain value as cel-python's types."""
    ct = _celpy().celtypes
    t = type(value)
    if t is dict:
        out = ct.MapType()
        for k, v in value.items():
            out[to_cel(k)] = to_cel(v)
        return out
    if t is list or t is tuple:
        return ct.ListType([to_cel(v) for v in value])
    if t is str:
        return ct.StringType(value)
    if t is bool:
        return ct.BoolType(value)
    if t is int:
        return ct.IntType(value)
    if t is float:
        return ct.DoubleType(value)
    if t is bytes:
        return ct.BytesType(value)
    if isinstance(value, datetime.datetime):
        return ct.TimestampType(value)
    if isinstance(value, datetime.timedelta):
        return ct.DurationType(value)
    if isinstance(value, datetime.date):
        return ct.IntType(value.toordinal() - _EPOCH_DAY)
    if isinstance(value, uuid.UUID):
        return ct.StringType(str(value))
    return value  # None, Decimal and other values cel-python takes as they are


def from_cel(value: Any) -> Any:
    """A cel-python value as a plain one."""
    ct = _celpy().celtypes
    if isinstance(value, ct.BoolType):
        return bool(value)
    if isinstance(value, (ct.IntType, ct.UintType)):
        return int(value)
    if isinstance(value, ct.DoubleType):
        return float(value)
    if isinstance(value, ct.StringType):
        return str(value)
    if isinstance(value, ct.BytesType):
        return bytes(value)
    if isinstance(value, dict):
        return {from_cel(k): from_cel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_cel(v) for v in value]
    if isinstance(value, tuple):
        return tuple(from_cel(v) for v in value)
    if isinstance(value, ct.NullType):
        return None
    return value


# -- Confluent's extension functions ----------------------------------------------------------------------------


def _hostname(host: str) -> bool:
    host = host[:-1] if host.endswith(".") else host
    if not host or len(host) > 253:
        return False
    labels = host.split(".")
    for label in labels:
        if not 0 < len(label) <= 63 or label[0] == "-" or label[-1] == "-":
            return False
        if not all(c.isascii() and (c.isalnum() or c == "-") for c in label):
            return False
    return not labels[-1].isdigit()


def _ip(text: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(text).version == version
    except ValueError:
        return False


def _email(text: str) -> bool:
    if parseaddr(text)[1] != text or len(text) > 254:
        return False
    local, at, domain = text.rpartition("@")
    return bool(at) and 0 < len(local) <= 64 and "@" not in local and _hostname(domain)


def _uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def _uri(text: str) -> bool:
    parts = urlparse(text)
    return bool(parts.scheme and parts.netloc and parts.path)


def _uri_ref(text: str) -> bool:
    parts = urlparse(text)
    return not (not (parts.scheme and parts.path) and parts.fragment)


def _extension(check: Callable[[str], bool]) -> Callable[[Any], Any]:
    def function(value: Any) -> Any:
        celpy = _celpy()
        if not isinstance(value, (celpy.celtypes.StringType, str)):
            raise celpy.CELEvalError("invalid argument, expected string")
        return celpy.celtypes.BoolType(check(str(value)))

    return function


EXTENSIONS: dict[str, Callable[[str], bool]] = {
    "isEmail": _email,
    "isHostname": _hostname,
    "isIpv4": lambda s: _ip(s, 4),
    "isIpv6": lambda s: _ip(s, 6),
    "isUri": _uri,
    "isUriRef": _uri_ref,
    "isUuid": _uuid,
}

# -- programs ----------------------------------------------------------------------------------------------------

_env_lock = threading.Lock()
_env: Any = None


def _environment() -> Any:
    global _env
    with _env_lock:
        if _env is None:
            _env = _celpy().Environment()
        return _env


class CelProgram:
    """One CEL expression: ``evaluate(bindings)`` with plain values in and out. Parse errors raise at
    construction (``ValueError`` with cel-python's message)."""

    def __init__(self, expr: str) -> None:
        celpy = _celpy()
        env = _environment()
        self.expr = expr
        try:
            with _env_lock:
                ast = env.compile(expr)
        except celpy.CELParseError as e:
            raise ValueError(f"invalid CEL expression {expr!r}: {e}") from e
        functions = {name: _extension(check) for name, check in EXTENSIONS.items()}
        self._program = env.program(ast, functions=functions)
        self._needs_now = "now" in expr
        self.fast: Callable[[dict[str, Any]], Any] | None
        try:
            self.fast = compile_cel(ast, lambda token: from_cel(env.program(_literal_tree(token)).evaluate({})))
        except Unsupported:
            self.fast = None

    def evaluate(self, bindings: dict[str, Any]) -> Any:
        fast = self.fast
        if fast is not None:
            try:
                return fast(bindings)
            except Fallback:
                pass
        return self.interpret(bindings)

    def interpret(self, bindings: dict[str, Any]) -> Any:
        """cel-python's answer (the reference the compiled closure agrees with)."""
        activation = {name: to_cel(value) for name, value in bindings.items()}
        if self._needs_now and "now" not in activation:
            activation["now"] = _celpy().celtypes.TimestampType(datetime.datetime.now(tz=datetime.UTC))
        return from_cel(self._program.evaluate(activation))


def _literal_tree(token: Any) -> Any:
    import lark  # cel-python's parser

    return lark.Tree("literal", [token])
