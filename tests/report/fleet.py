"""Test inputs for the fleet report: a 1,000-node stack written as a user would write it."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def big_fleet() -> dict:
    """600 H100x8 nodes (planned by count), 300 A100s split 7x 1g.5gb and 100 T4s time-sliced 4 ways."""
    job = {"kind": "inference", "image": "nvcr.io/nvidia/pytorch:25.08-py3"}
    return {"config": {
        "gpufleet:mode": "standalone",
        "gpufleet:cluster": {"context": "big"},
        "gpufleet:devicePlugin": {"migStrategy": "mixed", "gfd": True,
                                  "sharingProfiles": {"t4-ts": {"strategy": "timeSlicing", "replicas": 4}}},
        "gpufleet:mig": {"geometries": {"all-1g.5gb": [
            {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 7}}]}},
        "gpufleet:nodePools": [
            {"name": "h100", "count": 600, "gpu": {"product": "NVIDIA-H100-80GB-HBM3", "count": 8}},
            {"name": "a100-mig", "nodes": [f"a100-{i}" for i in range(300)],
             "gpu": {"product": "A100-PCIE-40GB", "count": 1}, "migGeometry": "all-1g.5gb"},
            {"name": "t4", "nodes": [f"t4-{i}" for i in range(100)], "gpu": {"product": "Tesla-T4", "count": 1},
             "sharing": "t4-ts"},
        ],
        "gpufleet:workloads": [
            {**job, "name": "trainer", "nodePool": "h100", "replicas": 250, "gpu": {"count": 8, "memoryMiB": 60000}},
            {**job, "name": "small", "nodePool": "a100-mig", "replicas": 700, "gpu": {"profile": "1g.5gb"}},
            {**job, "name": "edge", "nodePool": "t4", "replicas": 130, "gpu": {"shared": True, "memoryMiB": 3000}},
        ],
    }}


def write_big_fleet(directory: Path) -> str:
    """Write Pulumi.big.yaml into `directory`; returns the stack name."""
    (directory / "Pulumi.big.yaml").write_text(yaml.safe_dump(big_fleet(), sort_keys=False))
    return "big"
