"""PriorityClasses the API server accepts or refuses (kubernetes v1.34 pkg/apis/scheduling/validation), shared by
the unit test of check's validation and the e2e test that creates each one in the real API server."""

from __future__ import annotations


def klass(name: str, value, **extra) -> dict:
    out = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, **extra}
    if value is not None:
        out["value"] = value
    return out


#: case -> (the class, the field check names, or None where the API server accepts it)
CASES = {
    "plain": (klass("e2e-plain", 1000), None),
    "no-value": (klass("e2e-no-value", None), None),
    "negative": (klass("e2e-negative", -5), None),
    "highest-user": (klass("e2e-highest", 1_000_000_000), None),
    "never": (klass("e2e-never", 10, preemptionPolicy="Never"), None),
    "preempt-lower": (klass("e2e-lower", 10, preemptionPolicy="PreemptLowerPriority"), None),
    "above-user-range": (klass("e2e-too-high", 1_000_000_001), "value"),
    "beyond-int32": (klass("e2e-beyond", 2**31), "value"),
    "string-value": (klass("e2e-string", "100"), "value"),
    "bad-policy": (klass("e2e-bad-policy", 10, preemptionPolicy="never"), "preemptionPolicy"),
    "system-prefix": (klass("system-e2e", 10), "metadata.name"),
    "bad-name": (klass("E2E_Upper", 10), "metadata.name"),
    "default-not-bool": (klass("e2e-default", 10, globalDefault="yes"), "globalDefault"),
}
