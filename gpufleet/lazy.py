"""A package's names loaded on first use (PEP 562): importing one of its modules does not import the rest."""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any


def names_on_first_use(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """The package's module `__getattr__`: `where` maps each name to the submodule that defines it."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{where[name]}"), name)
        setattr(sys.modules[package], name, value)  # the next lookup finds it directly
        return value

    return __getattr__
