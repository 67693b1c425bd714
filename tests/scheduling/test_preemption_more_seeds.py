"""gpufleet's preemption on seeds it was not tuned on, against the real control plane.

Two fixtures in tests/fixtures/oracle-preemption hold later seeds of tests/scheduling/preemption_scenarios.py,
three runs each, recorded as scenarios.json was (scripts/record_preemption_oracle.py):
- more-seeds.json, seeds 24-59: recorded after the rules were measured on scenarios.json's 24 seeds; the
  queue-order rules were measured on them too since;
- held-out.json, seeds 60-134: recorded as unseen seeds, 60-89 once the rules were fixed (one rule came after,
  from seed 86: pods Pending for room try again when a victim is deleted), 90-104 after that rule; more came
  from seeds 95 and 96 (evicted running pods are made again by their controllers; a nominated pod binds after
  the pods of higher priority queued, those a deletion brings back and those still to come); 105-119 were
  recorded before those and first measured after them; 120-134 after every rule. No other rule was measured on
  them.
They show how the rules hold on fleets they were not fitted to. The real runs disagree among themselves (ties
the scheduler breaks by a parallel search and map order, a queue that controllers fill at their own pace), so
the figures are compared with the runs' own agreement, per run and new workload:
- verdicts: the check's runs/pending is the run's own, or another run's;
- victims: the check's victim set (workloads and pod counts; none is a set too) is one a real run chose;
- and, on the same footing as a rerun, one that another run chose, against how often the run's own set is.

The floors below are the figures measured when the fixture was recorded (docs/capacity.md, Preemption): a change
that makes any of them worse fails here, and one that makes them better should raise them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.scheduling.preemption_scenarios import scenario, write
from tests.scheduling.test_preemption_oracle import check, preemption_missing, real_verdict, victims_of

FIXTURES = Path(__file__).parents[1] / "fixtures" / "oracle-preemption"
#: Per fixture: (scenarios whose verdicts agree in every run, victim sets that are a real run's, ... another
#: run's).
FLOORS = {"more-seeds.json": {"verdicts": 34, "victims": 137, "victims_rerun": 75},
          "held-out.json": {"verdicts": 71, "victims": 285, "victims_rerun": 164}}


def agreement(recorded: dict, tmp_path: Path) -> dict[str, int]:
    out = {"scenarios": 0, "verdicts": 0, "cases": 0, "victims": 0, "victims_rerun": 0, "real_rerun": 0}
    for entry in recorded["scenarios"]:
        new = [f"{m['kind']}/{m['metadata']['namespace']}/{m['metadata']['name']}"
               for m in scenario(entry["seed"])["manifests"]]
        runs = entry["runs"]
        verdicts = {k: {real_verdict(r["workloads"][k]) for r in runs} for k in new}
        counts = [victims_of(r["preemptions"]) for r in runs]
        agree = True
        for i, r in enumerate(runs):
            doc = check(entry, r, tmp_path / f"{entry['seed']}-{i}")
            pending = {u["workload"] for u in doc.get("unschedulable", [])}
            agree &= all(("pending" if k in pending else "runs") in verdicts[k] for k in new)
            mine = victims_of(doc.get("preemptions") or [])
            others = [c for j, c in enumerate(counts) if j != i]
            for k in set(mine).union(*counts):
                out["cases"] += 1
                out["victims"] += mine.get(k, {}) in [c.get(k, {}) for c in counts]
                out["victims_rerun"] += mine.get(k, {}) in [c.get(k, {}) for c in others]
                out["real_rerun"] += counts[i].get(k, {}) in [c.get(k, {}) for c in others]
        out["scenarios"] += 1
        out["verdicts"] += agree
    return out


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_the_later_fixtures_hold_what_the_generator_makes(name, tmp_path):
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"no recorded runs at {path}")
    for entry in json.loads(path.read_text())["scenarios"]:
        paths = write(scenario(entry["seed"]), tmp_path / str(entry["seed"]))
        assert hashlib.sha256(b"".join(p.read_bytes() for p in paths)).hexdigest() == entry["inputs_sha256"]


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_on_seeds_it_was_not_fitted_to_preemption_keeps_its_measured_agreement(name, tmp_path):
    missing = preemption_missing()
    if missing:
        pytest.skip(missing)
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"no recorded runs at {path}")
    figures = agreement(json.loads(path.read_text()), tmp_path)
    print(f"\n{name}: verdicts agree in {figures['verdicts']} of {figures['scenarios']} scenarios; victim sets "
          f"a real run's in {figures['victims']} of {figures['cases']} cases, another run's in "
          f"{figures['victims_rerun']} (a real run's own: {figures['real_rerun']})")
    assert figures["scenarios"] >= 30 and figures["cases"] >= 100, figures
    worse = {k: (figures[k], floor) for k, floor in FLOORS[name].items() if figures[k] < floor}
    assert not worse, f"below the measured agreement (figure, floor): {worse}"
