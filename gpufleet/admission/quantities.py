"""Quantities as the API server prints them in admission errors (apimachinery `resource.Quantity`).

A quantity keeps the format it was written in: `1Gi` is BinarySI, `500m` and `2` DecimalSI, and a sum keeps
the format of its first non-zero term (`Quantity.Add`). `Quantity.String()` then prints the canonical form of that
format: DecimalSI with the largest power-of-1000 suffix that keeps the number whole (`1500` stays `1500`,
`2000` becomes `2k`, `0.5` becomes `500m`); BinarySI with the largest power-of-1024 suffix that keeps it
whole, falling back to DecimalSI below 1024 or for a fraction (k8s.io/apimachinery pkg/api/resource
quantity.go `Add` and `CanonicalizeBytes`, read at v1.34.1 as vendored by kubernetes-sigs/cluster-capacity
commit 3cb0ea289).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gpufleet.capacity.quantity import parse
from gpufleet.errors import InputError

_BINARY = ((6, "Ei"), (5, "Pi"), (4, "Ti"), (3, "Gi"), (2, "Mi"), (1, "Ki"))
_DECIMAL = ((18, "E"), (15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, ""), (-3, "m"), (-6, "u"),
            (-9, "n"))


@dataclass(frozen=True)
class Q:
    """An exact quantity and the format it prints in."""

    value: Decimal
    binary: bool = False

    def __add__(self, other: Q) -> Q:
        # Quantity.Add: the sum keeps the receiver's format, unless the receiver is zero.
        return Q(self.value + other.value, other.binary if self.value == 0 else self.binary)

    def __gt__(self, other: Q) -> bool:
        # Quantity.Cmp(other) > 0: by value, whatever the format.
        return self.value > other.value

    @property
    def milli(self) -> int:
        """MilliValue(): rounded up to a whole thousandth."""
        return math.ceil(self.value * 1000)

    def __str__(self) -> str:
        return quantity_string(self.value, self.binary)


def q(value: Any) -> Q | None:
    """The quantity a manifest value writes, or None when it is not one."""
    try:
        number = parse(value)
    except (InputError, ValueError, TypeError, ArithmeticError):
        return None
    return Q(number, isinstance(value, str) and value.strip().endswith("i"))


ZERO = Q(Decimal(0))


def quantity_string(value: Decimal, binary: bool = False) -> str:
    """`Quantity.String()` of a value in the given format."""
    if value == 0:
        return "0"
    if binary and value == value.to_integral_value() and abs(value) >= 1024:
        whole = int(value)
        for power, suffix in _BINARY:
            if whole % 1024**power == 0:
                return f"{whole // 1024**power}{suffix}"
        return str(whole)
    # DecimalSI: round up to nano (the smallest suffix), then the largest suffix that keeps it whole.
    nanos = math.ceil(value * 10**9)
    for exponent, suffix in _DECIMAL:
        unit = 10 ** (exponent + 9)
        if nanos % unit == 0:
            return f"{nanos // unit}{suffix}"
    return f"{nanos}n"
