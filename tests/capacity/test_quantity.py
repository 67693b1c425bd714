"""The Kubernetes quantity grammar (apimachinery resource.ParseQuantity) and the units the scheduler compares."""

import subprocess
import sys
from decimal import Decimal

import pytest

from gpufleet.capacity.quantity import milli, parse, to_units
from gpufleet.errors import InputError


@pytest.mark.parametrize("text, value", [
    ("1", "1"), ("500m", "0.5"), ("1.5", "1.5"), ("2.0", "2"), (".5", "0.5"), ("5.", "5"), ("+3", "3"), ("-1", "-1"),
    ("100n", "0.0000001"), ("250u", "0.00025"), ("1k", "1000"), ("2M", "2000000"), ("3G", "3e9"), ("4T", "4e12"),
    ("5P", "5e15"), ("6E", "6e18"),
    ("1Ki", "1024"), ("1Mi", str(1024**2)), ("16Gi", str(16 * 1024**3)), ("1Ti", str(1024**4)), ("1Pi", str(1024**5)),
    ("1Ei", str(1024**6)), ("1.5Gi", str(3 * 1024**3 // 2)),
    ("1e3", "1000"), ("1E3", "1000"), ("12e-1", "1.2"), ("1e+2", "100"), ("5E-3", "0.005"),
])
def test_quantity_grammar_values(text, value):
    assert parse(text) == Decimal(value)


@pytest.mark.parametrize("text", [
    "1K", "1Kb", "1ki", "1mi", "1_000", "1.2.3", "", ".", "e3", "1e", "1e1.5", "Infinity", "NaN", "1 Gi", "--1",
    "0x10", "lots",
])
def test_text_outside_the_grammar_is_not_a_quantity(text):
    with pytest.raises(InputError, match="not a Kubernetes quantity"):
        parse(text)


@pytest.mark.parametrize("value, resource, units", [
    ("100m", "cpu", 100), ("1.0005", "cpu", 1001), (0.1, "cpu", 100), (2, "cpu", 2000), ("1.5", "memory", 2),
    ("128Mi", "memory", 128 * 1024**2), ("1", "nvidia.com/gpu", 1), (2.0, "nvidia.com/gpu", 2),
])
def test_compared_units_round_up_like_resource_quantity(value, resource, units):
    assert to_units(resource, value) == units


def test_milli_value_of_numbers_and_text_agree():
    assert milli(0.25) == milli("250m") == 250


def test_reading_quantities_does_not_import_the_kubernetes_client():
    code = ("import sys; from gpufleet.capacity.quantity import to_units; to_units('cpu', '1'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'pydantic', 'pulumi')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
