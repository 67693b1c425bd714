"""The config package imports downwards only: no module of gpufleet/config imports one that imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

CONFIG = ROOT / "gpufleet" / "config"


def imports_of(path: Path) -> set[str]:
    """gpufleet.config modules imported anywhere in `path` (top level or inside functions)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gpufleet.config."):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("gpufleet.config.")}
    return found


def test_config_modules_have_no_import_cycle():
    graph = {f"gpufleet.config.{p.stem}": imports_of(p) for p in CONFIG.glob("*.py") if p.stem != "__init__"}

    def reaches(start: str, target: str, seen: set[str]) -> bool:
        for dep in graph.get(start, ()):
            if dep == target or (dep not in seen and (seen.add(dep) or reaches(dep, target, seen))):
                return True
        return False

    assert "gpufleet.config.aks_rules" in graph and "gpufleet.config.stack" in graph
    cycles = sorted(m for m in graph if reaches(m, m, set()))
    assert cycles == []


def test_name_rules_sit_below_the_config_layer():
    """gpufleet.k8s_names and gpufleet.exposure are pure: importable from every layer, importing no gpufleet module."""
    for module in ("k8s_names", "exposure"):
        tree = ast.parse((ROOT / "gpufleet" / f"{module}.py").read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not any(m.startswith("gpufleet") for m in imported), (module, imported)
