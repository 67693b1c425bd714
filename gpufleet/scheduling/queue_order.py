"""The order in which pods reach kube-scheduler when workloads are applied together and some may preempt.

A check without preemption schedules each workload's pods in manifest order, as the reference it is measured
against creates them (docs/fidelity.md). Where priorities decide, the truth is a real cluster's
(tests/fixtures/oracle-preemption/), and there the controllers make the pods: a bare Pod is there at once, a
Job's and a ReplicaSet's or StatefulSet's pods one controller step later, a Deployment's a step after that
(the Deployment makes the ReplicaSet). Two rules follow, each measured on the recorded runs
(docs/capacity.md, Preemption):
- new workloads of equal priority that may preempt, one after another in the manifests, reach the queue
  together: those made a step sooner first, then one pod of each in turn (their controllers make them
  concurrently, and the queue takes pods of equal priority as they come);
- among running pods of equal priority and start time, the one bound first is the more important (the
  scheduler's node info keeps pods in the order they came; a stable sort keeps it among ties), and a pod made a
  controller step later was bound later.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

#: Controller steps between applying a workload and its pods existing.
CREATION_STEP = {"Pod": 0, "Job": 1, "ReplicaSet": 1, "StatefulSet": 1, "Deployment": 2, "CronJob": 2}


def creation_step(kind: str) -> int:
    return CREATION_STEP.get(kind, 1)


def turns(indices: Sequence[int], kinds: dict[int, str], replicas: dict[int, int], priority: dict[int, int],
          together: Callable[[int], bool]) -> list[tuple[int, int]]:
    """(workload index, pods) in the order the scheduler takes them. `together(i)`: workload i may preempt and
    is scheduled pod by pod with the others (no claims, no pod rules): a run of such workloads of one priority
    comes one pod per turn, interleaved; the others keep manifest order, whole."""
    out: list[tuple[int, int]] = []
    k = 0
    while k < len(indices):
        group = [indices[k]]
        if together(indices[k]):
            while k + len(group) < len(indices) and together(indices[k + len(group)]) \
                    and priority[indices[k + len(group)]] == priority[indices[k]]:
                group.append(indices[k + len(group)])
        k += len(group)
        if not together(group[0]):
            out.append((group[0], replicas[group[0]]))
            continue
        group.sort(key=lambda i: creation_step(kinds[i]))  # stable: manifest order within a step
        left = {i: replicas[i] for i in group}
        out += [(i, 0) for i in group if not left[i]]
        while any(left.values()):
            for i in group:
                if left[i]:
                    out.append((i, 1))
                    left[i] -= 1
    return out
