"""Field errors in the API server's words (apimachinery `field.Error`): `<path>: <Type>: <value>: <detail>`.

A `FieldError` keeps the path apart from the body so callers can print it as the API server does
(`spec.replicas: Invalid value: -1: must be greater than or equal to 0`) or next to a file and object.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FieldError:
    path: str
    body: str

    def __str__(self) -> str:
        return f"{self.path}: {self.body}"


def show(value: Any) -> str:
    """A bad value as the API server prints it: strings quoted, numbers and booleans bare, the rest as JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))  # Go prints 2.0 as 2 and 1e20 in full
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    try:  # recent API servers print maps and structs as compact JSON, keys sorted
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return repr(value)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(path, f"Invalid value: {show(value)}: {detail}")


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, "Required value" + (f": {detail}" if detail else ""))


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(path, f"Duplicate value: {show(value)}")


def not_supported(path: str, value: Any, allowed: list[str]) -> FieldError:
    return FieldError(path, f"Unsupported value: {show(value)}: supported values: "
                            + ", ".join(json.dumps(a) for a in allowed))


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, f"Forbidden: {detail}")


def each(path: str, value: Any, reasons: list[str]) -> list[FieldError]:
    """One Invalid error per reason a name check gave (as `ValidateObjectMeta` does for names)."""
    return [invalid(path, value, r) for r in reasons]
