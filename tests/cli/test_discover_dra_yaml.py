"""`discover --dra` reads the DRA objects `check` reads: YAML as well as kubectl's JSON, several documents
per file (the DeviceClasses a chart renders, `kubectl get ... -o yaml`)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.run_inprocess import run

DRA = Path(__file__).resolve().parents[1] / "fixtures" / "dra"


def test_discover_reads_device_classes_from_multi_document_yaml(tmp_path):
    out = tmp_path / "capacity.json"
    r = run("discover", "--out", out, "--nodes", DRA / "nodes.json", "--dra", DRA / "deviceclasses.yaml",
            "--dra", DRA / "resourceslices.json")
    assert r.code == 0, r.err
    written = json.loads(out.read_text())
    assert [c["metadata"]["name"] for c in written["deviceClasses"]] == ["gpu.nvidia.com", "mig.nvidia.com"]
    assert written["resourceSlices"]


def test_a_yaml_list_is_read_as_its_json_twin(tmp_path):
    import yaml

    as_yaml = tmp_path / "slices.yaml"
    as_yaml.write_text(yaml.safe_dump(json.loads((DRA / "resourceslices.json").read_text())))
    made = {}
    for name, dra in (("json", DRA / "resourceslices.json"), ("yaml", as_yaml)):
        out = tmp_path / f"{name}.json"
        assert run("discover", "--out", out, "--nodes", DRA / "nodes.json", "--dra", dra).code == 0
        made[name] = json.loads(out.read_text())["resourceSlices"]
    assert made["yaml"] == made["json"]


def test_a_wrong_kind_in_a_later_document_is_named_by_document_and_item(tmp_path):
    dra = tmp_path / "dra.yaml"
    dra.write_text((DRA / "deviceclasses.yaml").read_text() + "---\nkind: List\nitems:\n- {kind: Node}\n")
    r = run("discover", "--out", tmp_path / "c.json", "--nodes", DRA / "nodes.json", "--dra", dra)
    assert r.code == 2
    assert r.err.startswith(f"{dra}: document 3: items[0]: kind: expected DeviceClass, ResourceSlice or "
                            "ResourceClaim"), r.err
