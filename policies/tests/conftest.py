"""Helpers for the policy tests: build validation args as the analyzer does (wire floats, unknown proxy)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import unknown_checking_proxy

FIXTURES = Path(__file__).parent / "fixtures"


def opts() -> PolicyResourceOptions:
    return PolicyResourceOptions(protect=False, ignore_changes=[], delete_before_replace=None, aliases=[],
                                 custom_timeouts=PolicyCustomTimeouts(0, 0, 0), additional_secret_outputs=[])


def wire(value: Any) -> Any:
    """What the analyzer hands a policy: ints become floats (protobuf Struct numbers)."""
    if isinstance(value, dict):
        return {k: wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [wire(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def urn(typ: str, name: str, stack: str = "test") -> str:
    return f"urn:pulumi:{stack}::p::{typ}::{name}"


def run_policy(policy, resources: list[dict], config: dict | None = None) -> list[tuple[str, str | None]]:
    """Violations (message, urn) of `policy` over fixture resources ({type, name?, props})."""
    found: list[tuple[str, str | None]] = []

    def report(message, urn_=None):
        found.append((message, urn_))

    items = [(r["type"], r.get("name", f"r{i}"), unknown_checking_proxy(wire(r.get("props") or {})))
             for i, r in enumerate(resources)]
    if isinstance(policy, StackValidationPolicy):
        res = [PolicyResource(t, p, urn(t, n), n, opts(), None, None, [], {}) for t, n, p in items]
        policy.validate(StackValidationArgs(res, config), report)
    else:
        for t, n, p in items:
            policy.validate(ResourceValidationArgs(t, p, urn(t, n), n, opts(), None, config), report)
    return found


def fixture_cases() -> list[tuple[str, str, dict]]:
    """(module, case name, case) for every fixture file `fixtures/<module>.yaml`."""
    cases = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        for name, case in (yaml.safe_load(path.read_text()) or {}).items():
            cases.append((path.stem, name, case))
    return cases
