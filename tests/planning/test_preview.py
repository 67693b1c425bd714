"""The preview tree never cuts a name: two resources always read differently, whatever the terminal width."""

from __future__ import annotations

import shutil

import pytest
from conftest import ROOT

NAMESPACE = "edge-appliance-inference-services-for-the-factory-floor-cameras"  # 63 characters
LONG = "object-detection-model-serving-for-camera-stream-number-000000{}"  # 63 characters with the digit
STACK = "factory-floor-edge-appliance-west-europe-01"  # stack names prefix every resource name


def long_named_project(tmp_path):
    text = (ROOT / "Pulumi.dev.yaml").read_text().replace("namespace: myasetest1", f"namespace: {NAMESPACE}")
    for n in (2, 3):
        text = text.replace(f"name: my-infer{n}", f"name: {LONG.format(n)}")
    d = tmp_path / "project"
    d.mkdir()
    shutil.copy(ROOT / "Pulumi.yaml", d / "Pulumi.yaml")
    (d / f"Pulumi.{STACK}.yaml").write_text(text)
    return d


@pytest.mark.parametrize("columns", ["80", "40"])
def test_names_differing_only_at_the_end_are_printed_in_full_on_narrow_terminals(cli, tmp_path, monkeypatch,
                                                                                 columns):
    monkeypatch.setenv("COLUMNS", columns)
    result = cli("plan", "--stack", STACK, "--project-dir", long_named_project(tmp_path), "--no-policies")
    assert result.code == 0, result.err
    for n in (2, 3):
        name = f"{STACK}-{NAMESPACE}-{LONG.format(n)}-deployment"
        rows = [line for line in result.out.splitlines() if name in line]
        assert len(rows) == 1 and rows[0].split()[-2:] == [name, "create"], result.out
    assert "…" not in result.out


def test_preview_does_not_depend_on_the_terminal_width(cli, tmp_path, monkeypatch):
    project = long_named_project(tmp_path)
    outputs = set()
    for columns in ("40", "80", "400"):
        monkeypatch.setenv("COLUMNS", columns)
        outputs.add(cli("plan", "--stack", STACK, "--project-dir", project, "--no-policies").out)
    assert len(outputs) == 1
