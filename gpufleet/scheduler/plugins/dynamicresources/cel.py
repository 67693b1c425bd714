"""DRA device selectors: CEL evaluated with cel-python in the Kubernetes DRA environment
(k8s.io/dynamic-resource-allocation v0.34.1 cel/compile.go; k8s.io/apiserver v0.34.1 pkg/cel/library).

`device.driver`, `device.attributes[domain][id]` and `device.capacity[domain][id]` (an unknown domain is
an empty map; names without a domain belong to the driver's domain), Quantity (`quantity(...)`,
`compareTo`, `isGreaterThan`, `isLessThan`, `asInteger`, ...) and Semver (`semver(...)`, `major`, ...)
values. Errors read as the scheduler's: `CEL compile error: ...`, `CEL runtime error: ...`.
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache
from typing import Any, cast

import celpy
import semver as semverlib
from celpy import celtypes
from celpy.evaluation import CELFunction

from gpufleet.capacity.quantity import parse as parse_quantity
from gpufleet.errors import InputError
from gpufleet.scheduler.plugins.dynamicresources.cel_checker import TypeCheckError, check, rewrite
from gpufleet.scheduler.plugins.dynamicresources.cel_library import LIBRARY


class CelError(Exception):
    """A selector that cannot be compiled or evaluated; the text follows `CEL compile/runtime error: `."""


class Quantity(celtypes.StringType):
    """A Kubernetes quantity: compared by value (`==`, `compareTo`), printed as written."""

    value: Decimal

    def __new__(cls, text: str):
        self = cast(Quantity, super().__new__(cls, text))  # celtypes says StringType, not the subclass it makes
        self.value = parse_quantity(text)
        return self

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self.value)

    def __lt__(self, other: Any) -> bool:  # no overload of <, +, ...: only its methods compare it
        raise TypeError("no such overload")

    __le__ = __gt__ = __ge__ = __add__ = __radd__ = __mul__ = __rmul__ = __mod__ = __lt__  # type: ignore[assignment]


class Semver(celtypes.StringType):
    """A semantic version (semver 2.0), compared by precedence."""

    version: semverlib.Version

    def __new__(cls, text: str, normalize: bool = False):
        if normalize:
            text = _normalized(text)
        self = cast(Semver, super().__new__(cls, text))  # celtypes says StringType, not the subclass it makes
        self.version = semverlib.Version.parse(text)
        return self

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Semver):
            raise TypeError("no such overload")
        return self.version == other.version

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(str(self.version))

    def __lt__(self, other: Any) -> bool:  # no overload of <, +, ...: only its methods compare it
        raise TypeError("no such overload")

    __le__ = __gt__ = __ge__ = __add__ = __radd__ = __mul__ = __rmul__ = __mod__ = __lt__  # type: ignore[assignment]


def _normalized(text: str) -> str:
    text = text[1:] if text.startswith("v") else text
    core, sep, rest = text.partition("-") if "-" in text else text.partition("+")
    parts = [str(int(p)) if p.isdigit() else p for p in core.split(".")]
    parts += ["0"] * (3 - len(parts))
    return ".".join(parts) + sep + rest


def _quantity(text: Any) -> Quantity:
    try:
        return Quantity(str(text))
    except InputError as e:
        raise ValueError(str(e)) from e


def _semver(text: Any, normalize: Any = False) -> Semver:
    try:
        return Semver(str(text), bool(normalize))
    except ValueError as e:
        raise ValueError(f"could not parse {str(text)!r} as semver: {e}") from e


def _is(parse, *args) -> celtypes.BoolType:
    try:
        parse(*args)
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _cmp(a: Any, b: Any) -> int:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return (a.value > b.value) - (a.value < b.value)
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.version.compare(b.version)
    raise TypeError("no such overload")


def _num(a: Quantity, b: Any) -> Decimal:
    if isinstance(b, Quantity):
        return b.value
    if isinstance(b, int) and not isinstance(b, bool):
        return Decimal(int(b))
    raise TypeError("no such overload")


def _as_integer(q: Quantity) -> celtypes.IntType:
    if q.value != q.value.to_integral_value() or abs(q.value) >= 2 ** 63:
        raise ValueError("cannot convert value to integer")
    return celtypes.IntType(int(q.value))


FUNCTIONS: dict[str, CELFunction] = {
    **LIBRARY,
    "quantity": _quantity, "isQuantity": lambda t: _is(_quantity, t),
    "semver": _semver, "isSemver": lambda t, n=False: _is(_semver, t, n),
    "compareTo": lambda a, b: celtypes.IntType(_cmp(a, b)),
    "isGreaterThan": lambda a, b: celtypes.BoolType(_cmp(a, b) > 0),
    "isLessThan": lambda a, b: celtypes.BoolType(_cmp(a, b) < 0),
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: celtypes.DoubleType(float(q.value)),
    "isInteger": lambda q: celtypes.BoolType(q.value == q.value.to_integral_value() and abs(q.value) < 2 ** 63),
    "sign": lambda q: celtypes.IntType((q.value > 0) - (q.value < 0)),
    "add": lambda a, b: Quantity(str(a.value + _num(a, b))),
    "sub": lambda a, b: Quantity(str(a.value - _num(a, b))),
    "major": lambda s: celtypes.IntType(s.version.major),
    "minor": lambda s: celtypes.IntType(s.version.minor),
    "patch": lambda s: celtypes.IntType(s.version.patch),
}

_ENV = celpy.Environment()


class _Domains(celtypes.MapType):
    """domain -> {id -> value}; an unknown domain reads as an empty map, as in the scheduler."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType({})


@lru_cache(maxsize=4096)
def compile_selector(expression: str):
    """A runnable program for one expression; CelError with the compiler's message (`compilation failed:
    ERROR: <input>:L:C: ...` and the line with a caret, as cel-go words it) when the scheduler's compiler
    refuses it: a syntax error, or a type error (cel_checker)."""
    if _nesting(expression) > MAX_NESTING:
        raise CelError(f"compilation failed: ERROR: <input>:1:1: expression recursion limit exceeded: {MAX_NESTING}")
    try:
        tree = _ENV.compile(expression)
    except Exception as e:  # cel-python raises parse errors of several types
        raise CelError(f"compilation failed: {_syntax_error(e, expression)}") from e
    try:
        tree = rewrite(tree)
        check(tree, expression)
        return _ENV.program(tree, functions=FUNCTIONS)
    except TypeCheckError as e:
        raise CelError(f"compilation failed: {e}") from e
    except RecursionError as e:  # nested deeper than Python's stack, short of cel-go's limit
        raise CelError("compilation failed: expression nested too deeply for gpufleet to evaluate") from e


#: cel-go's parser refuses an expression nested deeper than this (parser.MaxRecursionDepth's default).
MAX_NESTING = 250


def _nesting(expression: str) -> int:
    """How deeply brackets nest in the expression, outside string literals."""
    depth = deepest = 0
    quote = ""
    escaped = False
    for ch in expression:
        if quote:
            escaped, quote = (not escaped and ch == "\\"), ("" if ch == quote and not escaped else quote)
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
    return deepest


def _syntax_error(e: Exception, expression: str) -> str:
    """cel-go's form: `ERROR: <input>:1:17: Syntax error: ...` and the line with a caret under the spot (where
    cel-python says where)."""
    line, column = getattr(e, "line", None), getattr(e, "column", None)
    if not isinstance(line, int) or not isinstance(column, int):
        return " ".join(str(e).split()) or type(e).__name__
    cause = e.__context__
    token = getattr(cause, "token", None) or getattr(cause, "char", None)
    found = f"unexpected {str(token)!r}" if token else "unexpected end of expression"
    lines = expression.split("\n")
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"ERROR: <input>:{line}:{column}: Syntax error: {found}\n | {source}\n | {'.' * (column - 1)}^"


def _value(v: dict, name: str) -> Any:
    if "bool" in v:
        return celtypes.BoolType(bool(v["bool"]))
    if "int" in v:
        return celtypes.IntType(int(v["int"]))
    if "version" in v:
        try:
            return Semver(str(v["version"]))
        except ValueError as e:
            raise CelError(f"attribute {name}: parse semantic version: {e}") from e
    return celtypes.StringType(str(v.get("string", "")))


def _qualified(name: str, driver: str) -> tuple[str, str]:
    domain, _, ident = name.rpartition("/")
    return (domain or driver), ident


@lru_cache(maxsize=65536)
def _names(name: str, driver: str) -> tuple[celtypes.StringType, celtypes.StringType]:
    domain, ident = _qualified(name, driver)
    return celtypes.StringType(domain), celtypes.StringType(ident)


@lru_cache(maxsize=65536)
def _converted(items: tuple, name: str) -> Any:
    return _value(dict(items), name)


@lru_cache(maxsize=65536)
def _capacity(text: str) -> Quantity:
    return Quantity(text)


def _attribute_value(v: dict, name: str) -> Any:
    """`_value`, converted once per distinct value (the converted values are immutable)."""
    try:
        return _converted(tuple(v.items()), name)
    except TypeError:  # an unhashable value: converted as it is
        return _value(v, name)


def device_activation(driver: str, attributes: dict, capacity: dict) -> dict:
    """The `device` variable for one device of a ResourceSlice (attributes/capacity as the API has them)."""
    attrs: dict = {}
    for name, v in attributes.items():
        domain, ident = _names(name, driver)
        attrs.setdefault(domain, {})[ident] = _attribute_value(v, name)
    caps: dict = {}
    for name, v in capacity.items():
        domain, ident = _names(name, driver)
        caps.setdefault(domain, {})[ident] = _capacity(str(v["value"]))
    return {"device": celtypes.MapType({
        celtypes.StringType("driver"): celtypes.StringType(driver),
        celtypes.StringType("attributes"): _Domains({k: celtypes.MapType(m) for k, m in attrs.items()}),
        celtypes.StringType("capacity"): _Domains({k: celtypes.MapType(m) for k, m in caps.items()}),
    })}


def evaluate(program, activation: dict) -> bool:
    """True/False for a selector; CelError with the runtime error text (`no such key: x`, ...)."""
    try:
        result = program.evaluate(activation)
    except celpy.CELEvalError as e:
        raise CelError(_runtime_text(e)) from e
    except Exception as e:  # a helper function refusing its operands
        raise CelError(str(e) or type(e).__name__) from e
    if isinstance(result, celpy.CELEvalError):
        raise CelError(_runtime_text(result))
    if not isinstance(result, celtypes.BoolType):
        raise CelError(f"CEL result of type {type(result).__name__} could not be converted to bool")
    return bool(result)


def _runtime_text(e: Exception) -> str:
    args = e.args
    text = str(args[0]) if args else str(e)
    if len(args) > 1 and args[1] is KeyError and ": " in text:
        return f"no such key: {text.split(': ', 1)[1].strip(chr(39))}"
    if len(args) > 1 and args[1] is TypeError:
        return "no such overload"
    if len(args) > 2 and args[1] is ValueError and args[2]:  # a function refusing its argument: its own words
        return str(args[2][0])
    return text


_LITERAL = r"(?:\"[^\"\\\n]*\"|'[^'\\\n]*')"
_PATH = re.compile(r"\bdevice\s*\.\s*(?:driver\b|(attributes|capacity)\s*\[\s*(" + _LITERAL + r")\s*\]\s*"
                   r"(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*\()|\[\s*(" + _LITERAL + r")\s*\]))(?!\s*\()")


@lru_cache(maxsize=4096)
def reads(expression: str) -> tuple[tuple[str, str, str], ...] | None:
    """The device fields an expression can read, as (attributes|capacity, domain, id), when every use of
    `device` in it is a whole path to one field (or `device.driver`, always read); None when some use is
    not (a map as a whole, an index that is not a literal): then anything about the device may count."""
    found = []
    for m in _PATH.finditer(expression):
        if m.group(1):
            found.append((m.group(1), m.group(2)[1:-1], m.group(3) or m.group(4)[1:-1]))
    if re.search(r"\bdevice\b", _PATH.sub(" ", expression)):
        return None
    return tuple(dict.fromkeys(found))


def projection(activation: dict, paths: tuple[tuple[str, str, str], ...]) -> tuple:
    """What of a device an expression with these `reads` sees: its driver and each field's value as
    written (type and text), or that it is absent. Two devices equal here give the expression the same result."""
    device = activation["device"]
    out: list = [str(device[celtypes.StringType("driver")])]
    for where, domain, ident in paths:
        fields = dict.get(device[celtypes.StringType(where)], celtypes.StringType(domain))
        value = None if fields is None else dict.get(fields, celtypes.StringType(ident))
        out.append(None if value is None else (type(value).__name__, str(value)))
    return tuple(out)
