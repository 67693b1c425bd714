"""Kubernetes quantities as the scheduler compares them: cpu in millicores, everything else in units.

Parsing follows apimachinery's `resource.ParseQuantity` grammar exactly:

    quantity ::= [+-] number [suffix]      number ::= digits | digits "." [digits] | "." digits
    suffix   ::= Ki | Mi | Gi | Ti | Pi | Ei | n | u | m | k | M | G | T | P | E | (e | E) [+-] digits

Anything else ("1K", "1_000", " 1", "Infinity", "1.2.3") is not a quantity. Values are exact decimals
(Python's `decimal`, imported in microseconds, unlike the Kubernetes client's copy of this parser, which
costs its whole package). Parsing is cached because a cluster dump repeats the same few strings ("100m",
"128Mi", "1") tens of thousands of times. Values from Pulumi may arrive as numbers (2, 2.0); they are
read through their decimal text so that 0.1 stays 0.1.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from functools import lru_cache

from gpufleet.errors import InputError

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

_SUFFIXES = ((10**18, "E"), (10**15, "P"), (10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "k"))
_GRAMMAR = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


@lru_cache(maxsize=4096)
def _parse(text: str) -> Decimal:
    match = _GRAMMAR.fullmatch(text)
    if match is None:
        raise InputError(f"'{text}' is not a Kubernetes quantity (e.g. 2, 500m, 16Gi)")
    number, suffix = Decimal(match.group(1)), match.group(2)
    if not suffix:
        return number
    if suffix in _BINARY:
        return number * 1024 ** _BINARY[suffix]
    exponent = _DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:])
    return number.scaleb(exponent)


def parse(value: object) -> Decimal:
    """A quantity (string or number) as an exact decimal. Raises InputError when it is not one."""
    if isinstance(value, bool) or value is None:
        raise InputError(f"'{value}' is not a Kubernetes quantity (e.g. 2, 500m, 16Gi)")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"'{value}' is not a Kubernetes quantity")
        return _parse(repr(value) if isinstance(value, float) else str(value))
    return _parse(str(value).strip())


def to_units(resource: str, value: object) -> int:
    """The integer the scheduler compares: MilliValue for cpu, Value (rounded up) for the rest."""
    if isinstance(value, str):
        return _units_of_text(resource == CPU, value)
    return _units(resource == CPU, parse(value))


@lru_cache(maxsize=8192)
def _units_of_text(is_cpu: bool, text: str) -> int:
    return _units(is_cpu, parse(text))


def _units(is_cpu: bool, q: Decimal) -> int:
    return math.ceil(q * 1000) if is_cpu else math.ceil(q)


def milli(value: object) -> int:
    """MilliValue() of a quantity (rounded up, like resource.Quantity)."""
    return math.ceil(parse(value) * 1000)


def canonical(value: object) -> str:
    """Quantity.String() for decimal quantities: 0.5 -> 500m, 2.0 -> 2, 1000 -> 1k (binary suffixes kept)."""
    text = str(value).strip() if not isinstance(value, float) else repr(value)
    if text.endswith("i"):
        return text
    m = milli(value)
    if m % 1000:
        return f"{m}m"
    units = m // 1000
    for size, suffix in _SUFFIXES:
        if units and units % size == 0:
            return f"{units // size}{suffix}"
    return str(units)


def render(resource: str, units: int) -> str:
    """A human form of a compared integer (cpu millicores shown as cores, bytes as Mi/Gi)."""
    if resource == CPU:
        return f"{units}m" if units % 1000 else str(units // 1000)
    if resource in (MEMORY, EPHEMERAL_STORAGE) and units >= 1024**2 and units % 1024**2 == 0:
        return f"{units // 1024**3}Gi" if units % 1024**3 == 0 else f"{units // 1024**2}Mi"
    return str(units)
