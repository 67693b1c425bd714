"""check refuses (exit 2, naming the file, class and field) the PriorityClasses the API server refuses, and
never crashes on any value in their fields."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.manifests.documents import priority_class_errors
from tests.admission.priority_class_cases import CASES
from tests.cli.run_inprocess import run


@pytest.mark.parametrize("case", CASES)
def test_priority_class_field_errors_match_the_api_servers_verdict(case):
    obj, field = CASES[case]
    errors = priority_class_errors(obj)
    if field is None:
        assert errors == []
    else:
        assert errors and all(e.startswith(f"{field}:") for e in errors), errors


def test_check_exits_2_naming_every_bad_class(tmp_path):
    bad = [obj for obj, field in CASES.values() if field is not None]
    manifests = tmp_path / "classes.yaml"
    manifests.write_text("\n---\n".join(json.dumps(o) for o in bad))
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"kind": "List", "items": []}))
    done = run("check", "--nodes", nodes, manifests)
    assert done.code == 2
    for obj in bad:
        assert f"classes.yaml: PriorityClass/{obj['metadata']['name']}:" in done.err
    assert "Traceback" not in done.err


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                   max_size=3), max_leaves=8)


@given(st.dictionaries(st.sampled_from(["metadata", "value", "globalDefault", "preemptionPolicy", "description"]),
                       JSONISH, max_size=5))
def test_priority_class_validation_never_crashes(obj):
    errors = priority_class_errors({"kind": "PriorityClass", **obj})
    assert all(isinstance(e, str) and ": " in e for e in errors)
