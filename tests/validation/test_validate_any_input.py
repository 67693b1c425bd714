"""`gpufleet validate` takes any input without crashing: exit 0, 1 (one line per problem, each naming its
file) or 2 (unreadable input), never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.run_inprocess import run
from tests.mutations import mutated, text_mutated

FIXTURES = Path(__file__).parent.parent / "fixtures"
SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: web, namespace: infer, labels: {app: web}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}, {name: metrics, port: 9090, protocol: TCP}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      initContainers: [{name: fetch, image: busybox}]
      containers: [{name: main, image: trainer, resources: {limits: {nvidia.com/gpu: 1}}}]
"""
SOURCES = [list(yaml.safe_load_all((FIXTURES / "manifests" / "fits.yaml").read_text())),
           list(yaml.safe_load_all(SERVICE))]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                             HealthCheck.too_slow])


def validate(tmp_path: Path, text: str):
    path = tmp_path / "app.yaml"
    path.write_text(text)
    result = run("validate", path)
    assert "Traceback" not in result.out + result.err
    assert result.code in (0, 1, 2), result
    if result.code == 1:
        assert result.out.strip(), "exit 1 lists the problems"
        for line in result.out.strip().splitlines():
            assert line.startswith(f"{path}: "), f"problem line names no file: {line!r}"
    if result.code == 2:
        assert all(str(path) in line for line in result.err.strip().splitlines())
    return result


def test_the_unmutated_sources_are_valid(tmp_path):
    for docs in SOURCES:
        assert validate(tmp_path, yaml.safe_dump_all(docs)).code == 0


@SETTINGS
@given(docs=st.sampled_from(SOURCES).flatmap(mutated))
def test_damaged_manifests_never_crash_validate(tmp_path, docs):
    validate(tmp_path, yaml.safe_dump_all(docs if isinstance(docs, list) else [docs]))


@SETTINGS
@given(text=st.sampled_from([yaml.safe_dump_all(d) for d in SOURCES]).flatmap(text_mutated))
def test_cut_or_spliced_manifests_never_crash_validate(tmp_path, text):
    validate(tmp_path, text)


def test_no_traceback_reaches_stderr_of_the_real_process(tmp_path):
    (tmp_path / "app.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: 5}\n"
                                       "---\n? [a]\n: b\n")
    r = subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", "validate",
                        str(tmp_path / "app.yaml")], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr  # a file that does not parse is unreadable input
    assert r.stderr.startswith(f"{tmp_path / 'app.yaml'}: cannot read: not valid YAML")
