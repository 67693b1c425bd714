"""Property-based tests run the same examples every time unless a developer asks to explore, so a failure
found in CI reproduces on any machine."""

from __future__ import annotations

import os
import subprocess
import sys

from hypothesis import settings

from tests.conftest import ROOT


def test_the_default_profile_is_derandomized_and_writes_no_example_database():
    if os.environ.get("HYPOTHESIS_PROFILE", "ci") != "ci":
        return  # a developer exploring on purpose
    assert settings.default.derandomize is True and settings.default.database is None


PROBE = """
from hypothesis import given, strategies as st
import tests.conftest  # the profiles
seen = []
@given(st.integers())
def probe(x):
    seen.append(x)
probe()
print(seen[:20])
"""


def test_two_runs_draw_the_same_examples():
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_PROFILE"}
    runs = [subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, env=env,
                           timeout=120) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout.strip() not in ("", "[]")
