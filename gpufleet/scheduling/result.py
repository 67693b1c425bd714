"""What a check found, and its JSON contract (read by other tools; see docs/capacity.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gpufleet.capacity.memory_budget import MemoryProblem


@dataclass(frozen=True)
class Blocker:
    """An earlier workload (or the pods already running) holding capacity a Pending workload needed."""

    workload: str
    pods: int
    nodes: int
    elsewhere: bool = False
    """Whether its pods could also run on nodes the Pending workload cannot use."""

    def to_json(self) -> dict:
        return {"workload": self.workload, "pods": self.pods, "nodes": self.nodes, "couldRunElsewhere": self.elsewhere}


@dataclass(frozen=True)
class Blocked:
    """Why a workload pends: who took the nodes it could use, in words, and the fix a user would make."""

    summary: str
    fix: str
    by: tuple[Blocker, ...] = ()
    by_order: bool = False
    """Whether earlier workloads of the same manifests took the room: the verdict rests on manifest order, which
    a live cluster's controllers, creating pods in bursts, need not keep (docs/capacity.md)."""

    def to_json(self) -> dict:
        return {"summary": self.summary, "fix": self.fix, "workloads": [b.to_json() for b in self.by]}


@dataclass(frozen=True)
class Unschedulable:
    """A workload that provably will not run: rejected by the API server, pods left Pending, or (`memory`)
    a model that does not fit the GPU memory of any node it may land on; or (`policy`) one that a mandatory
    rule of the policy pack refuses (`message` starts with `[<policy name>]`)."""

    workload: str
    reason: Literal["rejected", "pending", "memory", "policy", "partly", "never"]
    pending: int
    message: str
    blocked: Blocked | None = None
    admitted: int | None = None
    """Admission (`rejected` by a quota or LimitRange partway through): the replicas that got in; `pending`
    is then the replicas refused."""
    refused_by: str = ""
    """The object that refused them, e.g. ResourceQuota/ml/gpu-quota."""
    defaulted: tuple = ()
    """The requests and limits LimitRange defaults put into its pods (admission.Defaulted): where a request the
    template does not make came from."""
    groups: dict[str, str] | None = None
    """With node groups (`never`: no scale-up helps it): per node group, why."""
    scale_up: dict[str, int] | None = None
    """With node groups, when scale-up places some of its pods: per node group, its pods on the added nodes."""
    stopped_by: str = ""
    """With node groups, when scale-up places only some of its pods: what left the rest Pending."""
    on_expendable_room: int = 0
    """With node groups (`partly`): its pods placed where expendable pods are preempted for them."""

    def to_json(self) -> dict:
        out = {"workload": self.workload, "reason": self.reason, "pending": self.pending, "message": self.message}
        if self.groups is not None:
            out["groups"] = self.groups
        if self.scale_up is not None:
            out["scaleUp"] = [{"nodeGroup": g, "pods": n} for g, n in self.scale_up.items()]
            out["onExpendableRoom"] = self.on_expendable_room
            out["stoppedBy"] = self.stopped_by
        if self.admitted is not None:
            out["admitted"] = self.admitted
        if self.refused_by:
            out["refusedBy"] = self.refused_by
        if self.defaulted:
            out["defaultedBy"] = [d.to_json() for d in self.defaulted]
        if self.blocked is not None:
            out["blockedBy"] = self.blocked.to_json()
        return out


@dataclass(frozen=True)
class Warning:
    """An outcome that depends on placement or order, or a device-level risk; does not fail the check."""

    workload: str
    message: str
    blocked: Blocked | None = None
    reason: str = ""
    """`model`: the engine starts the workload's model but holds fewer full-length requests than asked."""

    def to_json(self) -> dict:
        out: dict[str, Any] = {"workload": self.workload, "message": self.message}
        if self.reason:
            out["reason"] = self.reason
        if self.blocked is not None:
            out["blockedBy"] = self.blocked.to_json()
        return out


@dataclass(frozen=True)
class Evicted:
    """Pods of one workload on one node that a preemptor's pods evict."""

    workload: str
    pods: int
    node: str
    priority: int
    budget: str = ""
    """The PodDisruptionBudget (`namespace/name`) their eviction breaks, if any."""

    def to_json(self) -> dict:
        return {"workload": self.workload, "pods": self.pods, "node": self.node, "priority": self.priority,
                "pdbViolated": bool(self.budget)}

    def words(self) -> str:
        broken = f"; PodDisruptionBudget {self.budget} violated" if self.budget else ""
        return f"{self.pods} pod(s) of {self.workload} on {self.node} (priority {self.priority}{broken})"


@dataclass(frozen=True)
class Preemption:
    """A workload whose pods run only by evicting pods of lower priority (kube-scheduler's DefaultPreemption),
    or whose pods evicted some and then lost the room to pods of higher priority (`pods` 0)."""

    workload: str
    pods: int
    victims: tuple[Evicted, ...]
    otherwise: tuple[dict[str, int], ...] = ()
    """Where the scheduler's tie-breaks choose other nodes, the other victim sets seen (workload -> pods)."""
    runs: int = 1
    """The seeded runs of the scheduler the check made."""
    same: int = 1
    """Of them, those that evicted the same pods per workload as `victims`."""
    remade_after: str = ""
    """For a running workload (not one of the check's): the workload whose pods evicted some of its pods. Its
    controller made new ones, and they preempt in turn."""

    def to_json(self) -> dict:
        out = {"workload": self.workload, "pods": self.pods, "victims": [v.to_json() for v in self.victims]}
        if self.remade_after:
            out["remadeAfter"] = self.remade_after
        if self.otherwise:
            out["otherVictims"] = {"runs": self.runs, "sameVictims": self.same,
                                   "alternatives": [dict(o) for o in self.otherwise]}
        return out

    def evicting(self) -> str:
        """Whom it evicts, in words."""
        if not self.victims:
            return "no pod of its own choosing: it takes room whose pods are already being evicted for another workload"
        return ", ".join(v.words() for v in self.victims)

    def line(self) -> str:
        if self.remade_after:
            text = (f"evicted in turn: {self.remade_after} evicts pods of running {self.workload}, whose controller "
                    f"makes new ones, and they evict {self.evicting()}")
            if not self.pods:
                text += ", then a workload of higher priority takes that room"
        elif self.pods:
            text = f"fits by preemption: {self.workload} runs by evicting {self.evicting()}"
        else:
            text = (f"preempted in vain: {self.workload} evicts {self.evicting()}, then a workload of higher "
                    "priority takes that room")
        if self.otherwise:
            alternatives = "; ".join(", ".join(f"{n} of {w}" for w, n in o.items()) or "nothing"
                                     for o in self.otherwise[:3])
            text += (f" (where nodes tie: {self.runs - self.same} of {self.runs} runs of the scheduler's "
                     f"tie-breaking evict otherwise: {alternatives})")
        return text


#: Controller steps between `kubectl apply` and a workload's pods: a bare Pod none, a Job's and a ReplicaSet's
#: one (their controller makes them), a Deployment's two (it makes a ReplicaSet, which makes them), a
#: StatefulSet's the most (one pod at a time, each once the one before is Ready).
CREATION_STEPS = {"Pod": 0, "Job": 1, "ReplicaSet": 1, "Deployment": 2, "StatefulSet": 3}


@dataclass
class CheckResult:
    checked: list[str] = field(default_factory=list)
    unschedulable: list[Unschedulable] = field(default_factory=list)
    warnings: list[Warning] = field(default_factory=list)
    memory: list[MemoryProblem] = field(default_factory=list)
    #: Where each workload's pods were put in the first run of the scheduler: (workload key, node name, pods).
    #: Read by `gpufleet report`; not part of the JSON contract.
    placements: list[tuple[str, str, int]] = field(default_factory=list)
    #: Devices allocated to DRA claims in the check: (workload key, node name, driver/pool/device).
    #: Not part of the JSON contract.
    devices: list[tuple[str, str, str]] = field(default_factory=list)
    #: (workload, node, device) for every device a placed pod uses, a shared claim's included (the report).
    device_uses: list[tuple[str, str, str]] = field(default_factory=list)
    #: Pods left Pending in each seeded run, per workload (`gpufleet headroom`). Not part of the JSON contract.
    pending_by_run: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: With node groups (`check --node-groups`): the autoscaler's scale-ups and what runs after them
    #: (gpufleet.scheduling.scaleup.ScaleUpVerdicts); its JSON is added by the command.
    scale_up: Any = None
    #: Workloads that run only by preempting pods of lower priority (in the first run of the scheduler), then
    #: running workloads whose evicted pods their controllers made again, where those preempt in turn.
    preemptions: list[Preemption] = field(default_factory=list)
    #: Where the new pods of evicted running pods went in the first run: (running workload, node name, pods).
    #: Not part of the JSON contract.
    remade_placements: list[tuple[str, str, int]] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return not self.unschedulable

    @property
    def exit_code(self) -> int:
        return 0 if self.fits else 1

    def order_sensitive(self) -> list[tuple[str, tuple[str, ...]]]:
        """Workloads placed on room that a later workload of the same manifests, Pending for it, would reach
        first on a live cluster: (the holder, the Pending workloads it holds room from), in input order.

        The check creates pods in manifest order. Applied together, a bare Pod exists at once, a Job's or a
        ReplicaSet's pods one controller step later, a Deployment's two steps later and a StatefulSet's one at a
        time; where a workload made sooner pends for room that an earlier, slower one holds, the live cluster
        may give it that room and leave the holder Pending instead (docs/capacity.md, Order)."""
        held: dict[str, list[str]] = {}
        for u in self.unschedulable:
            if u.reason != "pending" or u.blocked is None or not u.blocked.by_order:
                continue
            steps = CREATION_STEPS.get(u.workload.split("/", 1)[0])
            if steps is None:
                continue
            for b in u.blocked.by:
                if CREATION_STEPS.get(b.workload.split("/", 1)[0], -1) > steps:
                    held.setdefault(b.workload, []).append(u.workload)
        return [(w, tuple(dict.fromkeys(later))) for w, later in held.items()]

    def to_json(self) -> dict:
        out = {"fits": self.fits, "checked": self.checked,
               "unschedulable": [u.to_json() for u in self.unschedulable],
               "warnings": [w.to_json() for w in self.warnings],
               "memoryBudget": [m.to_json() for m in self.memory]}
        if self.preemptions:
            out["preemptions"] = [p.to_json() for p in self.preemptions]
        sensitive = self.order_sensitive()
        if sensitive:
            out["orderSensitive"] = [{"workload": w, "roomWantedBy": list(later)} for w, later in sensitive]
        return out
