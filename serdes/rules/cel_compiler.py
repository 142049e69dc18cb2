"""CEL to Python closures: the common subset of CEL compiled once per rule, so a rule costs a few function calls
per record instead of a tree walk by cel-python's interpreter.

``compile_cel(tree, literal)`` takes cel-python's parse tree (``celpy.Environment().compile(expr)``) and returns
``fn(bindings) -> value`` over plain Python values (str, int, float, bool, bytes, None, dict, list). It covers
literals, variables, field selection and indexing on maps and lists, ``has()``, the arithmetic, comparison, logical
and conditional operators, ``in``, lists and maps, ``size``, ``startsWith``/``endsWith``/``contains`` and the
``int``/``double``/``string``/``bool`` conversions between the types where CEL and Python agree exactly.

Two ways out keep the result exactly cel-python's:

- ``Unsupported`` at compile time: the expression uses something else (macros, regexes, timestamps, unsigned
  ints, extension functions...); the caller evaluates it with cel-python every time.
- ``Fallback`` at run time: this evaluation met a case whose semantics the closure does not reproduce (mixed
  numeric types, a missing field, overflow, a division by zero, a value of another type); the caller evaluates
  this one record with cel-python, which gives the value or the error.

So the closures only ever answer where they are sure, and ``tests/serdes/test_cel_compiler.py`` checks both paths
agree on a corpus of expressions and values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Fn = Callable[[dict[str, Any]], Any]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


class Unsupported(Exception):
    """The expression is outside the compiled subset (cel-python evaluates it)."""


class Fallback(Exception):
    """This evaluation needs cel-python's semantics (it gives the value or the error)."""


def _fallback() -> Any:
    raise Fallback


def _kind(v: Any) -> type:
    """The CEL type a plain value stands for: bool is not an int here."""
    return type(v)


_ORDERED = (int, float, str, bytes)  # types whose ordering CEL defines as Python's (bool excluded)
_EQUATABLE = (int, float, str, bytes, bool)


def _int(v: int) -> int:
    if INT64_MIN <= v <= INT64_MAX:
        return v
    raise Fallback  # cel-python reports the overflow


# -- operators: both operands of the same plain type, or Fallback -----------------------------------------------


def _relation(op: str, left: Fn, right: Fn) -> Fn:
    if op in ("==", "!="):
        negate = op == "!="

        def eq(b: dict[str, Any]) -> Any:
            x, y = left(b), right(b)
            t = type(x)
            if t is not type(y) or t not in _EQUATABLE:
                raise Fallback
            return (x != y) if negate else (x == y)

        return eq
    compare = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y, ">=": lambda x, y: x >= y}[
        op
    ]

    def rel(b: dict[str, Any]) -> Any:
        x, y = left(b), right(b)
        t = type(x)
        if t is not type(y) or t not in _ORDERED:
            raise Fallback
        return compare(x, y)

    if op == ">":  # the most common rule shape, spelled out: no inner call

        def gt(b: dict[str, Any]) -> Any:
            x, y = left(b), right(b)
            t = type(x)
            if t is not type(y) or t not in _ORDERED:
                raise Fallback
            return x > y

        return gt
    return rel


def _in(left: Fn, right: Fn) -> Fn:
    def contains(b: dict[str, Any]) -> Any:
        x, container = left(b), right(b)
        t = type(x)
        if t not in _EQUATABLE or x != x:  # NaN: Python's `in` matches the same object, CEL never does
            raise Fallback
        if type(container) is list:
            if any(type(e) is not t for e in container):
                raise Fallback  # CEL's heterogeneous equality: leave it to cel-python
            return x in container
        if type(container) is dict:
            if any(type(k) is not t for k in container):
                raise Fallback
            return x in container
        raise Fallback

    return contains


def _arith(op: str, left: Fn, right: Fn) -> Fn:
    if op == "+":

        def add(b: dict[str, Any]) -> Any:
            x, y = left(b), right(b)
            t = type(x)
            if t is not type(y):
                raise Fallback
            if t is str or t is float or t is bytes or t is list:
                return x + y
            if t is int:
                return _int(x + y)
            raise Fallback

        return add
    if op == "-":

        def sub(b: dict[str, Any]) -> Any:
            x, y = left(b), right(b)
            t = type(x)
            if t is not type(y):
                raise Fallback
            if t is float:
                return x - y
            if t is int:
                return _int(x - y)
            raise Fallback

        return sub
    if op == "*":

        def mul(b: dict[str, Any]) -> Any:
            x, y = left(b), right(b)
            t = type(x)
            if t is not type(y):
                raise Fallback
            if t is float:
                return x * y
            if t is int:
                return _int(x * y)
            raise Fallback

        return mul
    if op == "/":

        def div(b: dict[str, Any]) -> Any:
            x, y = left(b), right(b)
            t = type(x)
            if t is not type(y) or not y:
                raise Fallback  # mixed types, or division by zero (an error or an infinity in CEL)
            if t is float:
                return x / y
            if t is int:
                q = abs(x) // abs(y)  # CEL truncates toward zero
                return _int(q if (x < 0) == (y < 0) else -q)
            raise Fallback

        return div
    if op == "%":

        def mod(b: dict[str, Any]) -> Any:
            x, y = left(b), right(b)
            if type(x) is not int or type(y) is not int or not y:
                raise Fallback
            r = abs(x) % abs(y)  # the remainder takes the sign of the dividend, as in C
            return -r if x < 0 else r

        return mod
    raise Unsupported(op)


# -- the tree --------------------------------------------------------------------------------------------------


class _Compiler:
    def __init__(self, literal: Callable[[Any], Any]) -> None:
        self.literal = literal  # evaluates a literal subtree with cel-python, as a plain value

    def node(self, tree: Any) -> Fn:
        method = getattr(self, "c_" + str(tree.data), None)
        if method is None:
            raise Unsupported(str(tree.data))
        return method(tree.children)

    # expr : conditionalor ["?" conditionalor ":" expr]
    def c_expr(self, ch: list[Any]) -> Fn:
        if len(ch) == 1:
            return self.node(ch[0])
        cond, yes, no = (self.node(c) for c in ch)

        def ternary(b: dict[str, Any]) -> Any:
            c = cond(b)
            if type(c) is not bool:
                raise Fallback
            return yes(b) if c else no(b)

        return ternary

    def c_conditionalor(self, ch: list[Any]) -> Fn:
        if len(ch) == 1:
            return self.node(ch[0])
        left, right = self.node(ch[0]), self.node(ch[1])

        def or_(b: dict[str, Any]) -> Any:
            x = left(b)
            if type(x) is not bool:
                raise Fallback
            if x:
                return True
            y = right(b)
            if type(y) is not bool:
                raise Fallback
            return y

        return or_

    def c_conditionaland(self, ch: list[Any]) -> Fn:
        if len(ch) == 1:
            return self.node(ch[0])
        left, right = self.node(ch[0]), self.node(ch[1])

        def and_(b: dict[str, Any]) -> Any:
            x = left(b)
            if type(x) is not bool:
                raise Fallback
            if not x:
                return False
            y = right(b)
            if type(y) is not bool:
                raise Fallback
            return y

        return and_

    def _binary(self, ch: list[Any], ops: dict[str, str], build: Callable[[str, Fn, Fn], Fn]) -> Fn:
        if len(ch) == 1:
            return self.node(ch[0])
        op_node, right = ch
        op = ops.get(str(op_node.data))
        if op is None:
            raise Unsupported(str(op_node.data))
        return build(op, self.node(op_node.children[0]), self.node(right))

    def c_relation(self, ch: list[Any]) -> Fn:
        ops = {
            "relation_lt": "<",
            "relation_le": "<=",
            "relation_gt": ">",
            "relation_ge": ">=",
            "relation_eq": "==",
            "relation_ne": "!=",
            "relation_in": "in",
        }
        return self._binary(ch, ops, lambda op, x, y: _in(x, y) if op == "in" else _relation(op, x, y))

    def c_addition(self, ch: list[Any]) -> Fn:
        return self._binary(ch, {"addition_add": "+", "addition_sub": "-"}, _arith)

    def c_multiplication(self, ch: list[Any]) -> Fn:
        return self._binary(
            ch, {"multiplication_mul": "*", "multiplication_div": "/", "multiplication_mod": "%"}, _arith
        )

    def c_unary(self, ch: list[Any]) -> Fn:
        if len(ch) == 1:
            return self.node(ch[0])
        op, operand = str(ch[0].data), self.node(ch[1])
        if op == "unary_not":

            def not_(b: dict[str, Any]) -> Any:
                x = operand(b)
                if type(x) is not bool:
                    raise Fallback
                return not x

            return not_
        if op == "unary_neg":

            def neg(b: dict[str, Any]) -> Any:
                x = operand(b)
                if type(x) is float:
                    return -x
                if type(x) is int:
                    return _int(-x)
                raise Fallback

            return neg
        raise Unsupported(op)

    def c_member(self, ch: list[Any]) -> Fn:
        return self.node(ch[0])

    def c_primary(self, ch: list[Any]) -> Fn:
        return self.node(ch[0])

    def c_paren_expr(self, ch: list[Any]) -> Fn:
        return self.node(ch[0])

    def c_ident(self, ch: list[Any]) -> Fn:
        name = str(ch[0])
        if name in ("now", "null", "true", "false"):
            raise Unsupported(name)

        def var(b: dict[str, Any]) -> Any:
            try:
                return b[name]
            except KeyError:
                raise Fallback from None

        return var

    def c_literal(self, ch: list[Any]) -> Fn:
        token = ch[0]
        if token.type == "UINT_LIT":
            raise Unsupported("unsigned int")
        value = self.literal(token)
        return lambda b: value

    def c_member_dot(self, ch: list[Any]) -> Fn:
        target, name = self.node(ch[0]), str(ch[1])

        def select(b: dict[str, Any]) -> Any:
            obj = target(b)
            if type(obj) is not dict:
                raise Fallback
            try:
                return obj[name]
            except KeyError:
                raise Fallback from None  # cel-python: no such member

        return select

    def c_member_index(self, ch: list[Any]) -> Fn:
        target, index = self.node(ch[0]), self.node(ch[1])

        def item(b: dict[str, Any]) -> Any:
            obj, key = target(b), index(b)
            if type(obj) is list and type(key) is int and 0 <= key < len(obj):
                return obj[key]
            if type(obj) is dict and type(key) is str and key in obj:
                return obj[key]
            raise Fallback

        return item

    def _args(self, exprlist: Any) -> list[Fn]:
        return [] if exprlist is None else [self.node(c) for c in exprlist.children]

    def c_list_lit(self, ch: list[Any]) -> Fn:
        items = self._args(ch[0] if ch else None)
        return lambda b: [f(b) for f in items]

    def c_map_lit(self, ch: list[Any]) -> Fn:
        parts = self._args(ch[0] if ch else None)
        pairs = list(zip(parts[0::2], parts[1::2], strict=True))

        def build(b: dict[str, Any]) -> Any:
            out = {}
            for k, v in pairs:
                key = k(b)
                if type(key) is not str or key in out:
                    raise Fallback
                out[key] = v(b)
            return out

        return build

    def c_ident_arg(self, ch: list[Any]) -> Fn:
        name = str(ch[0])
        exprlist = ch[1] if len(ch) > 1 else None
        if name == "has":
            return self._has(exprlist)
        args = self._args(exprlist)
        if len(args) != 1:
            raise Unsupported(name)
        (arg,) = args
        if name == "size":
            return _size(arg)
        conversion = _CONVERSIONS.get(name)
        if conversion is None:
            raise Unsupported(name)

        def convert(b: dict[str, Any]) -> Any:
            return conversion(arg(b))

        return convert

    def _has(self, exprlist: Any) -> Fn:
        if exprlist is None or len(exprlist.children) != 1:
            raise Unsupported("has")
        # has(x.f): the argument must be a field selection, which is not evaluated itself
        node = exprlist.children[0]
        while (
            str(node.data)
            in ("expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member")
            and len(node.children) == 1
        ):
            node = node.children[0]
        if str(node.data) != "member_dot":
            raise Unsupported("has")
        target, name = self.node(node.children[0]), str(node.children[1])

        def has(b: dict[str, Any]) -> Any:
            obj = target(b)
            if type(obj) is not dict:
                raise Fallback
            return name in obj

        return has

    def c_member_dot_arg(self, ch: list[Any]) -> Fn:
        target, name = self.node(ch[0]), str(ch[1])
        args = self._args(ch[2] if len(ch) > 2 else None)
        if name == "size" and not args:
            return _size(target)
        method = _STRING_METHODS.get(name)
        if method is None or len(args) != 1:
            raise Unsupported(name)
        (arg,) = args

        def call(b: dict[str, Any]) -> Any:
            s, x = target(b), arg(b)
            if type(s) is not str or type(x) is not str:
                raise Fallback
            return method(s, x)

        return call


def _size(arg: Fn) -> Fn:
    def size(b: dict[str, Any]) -> Any:
        x = arg(b)
        if type(x) in (str, bytes, list, dict):
            return len(x)
        raise Fallback

    return size


_STRING_METHODS: dict[str, Callable[[str, str], bool]] = {
    "startsWith": str.startswith,
    "endsWith": str.endswith,
    "contains": lambda s, x: x in s,
}


def _to_int(x: Any) -> int:
    if type(x) is int:
        return x
    if type(x) is float and x == x and INT64_MIN < x < INT64_MAX:
        return int(x)  # truncates toward zero, as CEL
    raise Fallback


def _to_double(x: Any) -> float:
    if type(x) is float:
        return x
    if type(x) is int:
        return float(x)
    raise Fallback


def _to_string(x: Any) -> str:
    if type(x) is str:
        return x
    if type(x) is int:
        return str(x)
    raise Fallback  # doubles, bytes and the rest are formatted by cel-python


def _to_bool(x: Any) -> bool:
    if type(x) is bool:
        return x
    raise Fallback


_CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "int": _to_int,
    "double": _to_double,
    "string": _to_string,
    "bool": _to_bool,
}


def compile_cel(tree: Any, literal: Callable[[Any], Any]) -> Fn:
    """``fn(bindings) -> value`` for cel-python's parse ``tree``; ``literal(token)`` gives a literal's plain value.
    Raises ``Unsupported`` when the expression is outside the subset."""
    return _Compiler(literal).node(tree)
