"""Why a workload pends: the earlier workloads that took the nodes it could use, and the fix to make.

The nodes it could use are those that pass its static filters (node selector, affinity, taints, cordon).
In the run that left it Pending, each earlier workload's pods on those nodes are counted. One whose own
filters also admit other nodes "could run elsewhere": a nodeSelector or taint that keeps it off this pool
is the fix a user would make. When every holder needs exactly these nodes, the fix is fewer pods or more
nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpufleet.capacity.model import Node
from gpufleet.capacity.ports import ALL_ADDRESSES
from gpufleet.manifests.workloads import PodWorkload
from gpufleet.scheduler.plugins.interpodaffinity import AFFINITY, ANTI_AFFINITY, EXISTING_ANTI_AFFINITY
from gpufleet.scheduler.plugins.nodeports import REASON as PORTS_TAKEN
from gpufleet.scheduler.plugins.podtopologyspread import NOT_MATCH as SPREAD
from gpufleet.scheduler.snapshot import PodShape, Snapshot
from gpufleet.scheduling.result import Blocked, Blocker
from gpufleet.scheduling.unmet import missing_resource, most_known

RUNNING = "pods already running"
PRODUCT = "nvidia.com/gpu.product"
#: Holders listed (the largest first); the rest are counted.
LISTED = 10
_SHOWN = 5


def blocked_by(index: int, shape: PodShape, outcome, run, workloads: Sequence[PodWorkload],
               shapes: dict[int, PodShape], snap: Snapshot, dra=None) -> Blocked | None:
    """`dra`: the check's DraState before any pod is placed, for a pod with claims."""
    nodes = snap.nodes
    eligible = outcome.blocked
    if eligible is None or not len(eligible):
        # No node passes its filters: the FailedScheduling text says which filter; a label no node carries
        # is the common cause worth naming (a product spelled as no GFD writes it, a pool label never set).
        return shape.memo("unmatched", lambda: _unmatched_labels(workloads[index], nodes))
    mask = shape.eligible
    holders = run.holders(shape)
    held = holders.before(index, LISTED)  # earlier workloads only: later ones cannot have taken its room
    blockers = [Blocker(workloads[j].key, pods, spots, _elsewhere(shapes[j], shape, snap)) for j, pods, spots in held]
    running_here = run.running[mask]
    if running_here.any():
        blockers.append(Blocker(RUNNING, int(running_here.sum()), int(np.count_nonzero(running_here))))
    where = shape.memo("where", lambda: _describe(snap, eligible))
    one_node = len(eligible) == 1
    w = workloads[index]
    too_big = shape.memo("too_big", lambda: _too_big(shape, snap))
    if too_big is not None:
        return Blocked(*too_big, tuple(blockers))
    if dra is not None and w.spec.get("resourceClaims") and not outcome.placed:
        # (a pod placed shows its claims can be allocated here)
        from gpufleet.scheduling.dra_unmatched import unmatched

        never = shape.memo(f"unmatched {w.namespace} {w.spec['resourceClaims']!r}", lambda: unmatched(
            dra, w.namespace, w.name, w.spec, np.asarray(eligible, dtype=np.int64)))
        if never is not None:
            return Blocked(*never, tuple(blockers))
    if "Insufficient" not in outcome.message:  # not room: a rule about other pods ruled the nodes out
        if shape.ports and PORTS_TAKEN in outcome.message:
            return Blocked(*_ports_held(shape, where, w, outcome), tuple(blockers))
        placement = _pod_rules(outcome.message, where, w)
        if placement is not None:
            return Blocked(*placement, tuple(blockers))
    need = _request(shape.requests) if shape.requests or not w.spec.get("resourceClaims") else "its claims' devices"
    if not held:
        has = _verb(one_node, "has", "have")
        summary = f"the {where} it may use {has} too little free for its pods ({need} each)"
        return Blocked(summary, _capacity_fix(w, outcome, need), tuple(blockers))
    listed = [b for b in blockers if b.workload != RUNNING]
    total, count = holders.total_before(index)
    hold = _verb(one_node, "holds", "hold")
    summary = f"the {where} it may use {hold} {total} pods of {_names(listed, count)}"
    loose = [b for b in listed if b.elsewhere]
    unselective = [b for (j, _, _), b in zip(held, listed, strict=False) if not _selects(workloads[j], PRODUCT)]
    if loose:
        who = "they" if len(loose) == len(listed) else _names(loose)
        select = _verb(who != "they" and len(loose) == 1, "selects", "select")
        tail = f", and {select} no {PRODUCT}" if all(b in unselective for b in loose) else ""
        summary += f"; {'all of them' if who == 'they' else who} could also run on other nodes{tail}"
        fix = (f"keep {'them' if who == 'they' else who} off these nodes: give them a nodeSelector (or required "
               f"node affinity) for the nodes they need, or taint these nodes and let only the workloads that need "
               f"them tolerate the taint")
    elif unselective and _selects(w, PRODUCT):
        who = "they" if len(unselective) == len(listed) else _names(unselective)
        one = who != "they" and len(unselective) == 1
        named = f"{who} {_verb(one, 'selects', 'select')} no"
        summary += f"; {'none of them selects' if who == 'they' else named} {PRODUCT}"
        fix = (f"if {who} {_verb(one, 'needs', 'need')} not run here, taint these nodes and tolerate the taint "
               f"only in {w.key}; else {_capacity_fix(w, outcome, need)}")
    else:
        fix = _capacity_fix(w, outcome, need)
    return Blocked(summary, fix, tuple(blockers), by_order=True)


def _elsewhere(other: PodShape, shape: PodShape, snap: Snapshot) -> bool:
    """Whether pods of `other` could also run on nodes that pods of `shape` cannot use (nodes that pass its
    filters and have what one pod asks for; cached on `shape`: the shapes of one check live as long as it)."""
    found = shape.beyond.get(id(other))
    if found is None:
        found = shape.beyond[id(other)] = bool(np.any(other.possible(snap) & ~shape.eligible))
    return found


def _too_big(shape: PodShape, snap: Snapshot) -> tuple[str, str] | None:
    """When one pod asks for more of a resource than any node it may use has at all, allocatable: a name no
    node has (gpufleet.scheduling.unmet), more than any known GPU product holds, or more than these nodes."""
    for r, v in sorted(shape.fit.items()):
        alloc = snap.alloc.get(r)
        at = shape.eligible if r not in snap.unknown else shape.eligible & ~snap.unknown[r]
        if not at.any() or at.sum() < shape.eligible.sum():
            continue
        top = 0 if alloc is None else int(alloc[at].max())
        if top >= v:
            continue
        one, most = _request({r: v}), (_request({r: top}) if top else f"no {r}")
        summary = f"one pod asks for {one}; the largest node it may use has {most} allocatable"
        if not top:
            missing = missing_resource(r, v, snap.nodes)
            if missing is not None:
                return missing
            return summary, (f"let it use the nodes that have {r} (its node selector, affinity or tolerations "
                             f"keep it off them), or add nodes it may use with {one}")
        known = most_known(r, snap.nodes)
        if known is not None and v > known[0]:
            return (f"{summary}; no node of a known GPU product holds {v} (the most is {known[1]})",
                    f"ask for at most {most} per pod and split the work over more pods: no node to add holds "
                    f"{one}")
        return summary, (f"ask for at most {most} per pod (split the work over more pods), or add nodes with "
                         f"{one}")
    return None


def _ports_held(shape: PodShape, where: str, w: PodWorkload, outcome) -> tuple[str, str]:
    """A pod that pends for its host ports: a host port admits one pod per node (and host IP), so more nodes
    or fewer pods per node is the fix, not a smaller request."""
    ports = ", ".join(dict.fromkeys(f"{port}/{protocol}" + ("" if ip == ALL_ADDRESSES else f" on {ip}")
                                    for protocol, ip, port in shape.ports))
    how = "hostNetwork: true makes every container port a host port; " if w.spec.get("hostNetwork") is True else ""
    summary = (f"its host port(s) {ports} are already held on the {where} it may use, and a host port admits "
               f"one pod per node: {how}{outcome.pending} more pod(s) need a node each")
    fix = (f"drop the hostPort (or hostNetwork) and reach the pods through a Service, or run at most one pod per "
           f"node it may use: {outcome.placed} now")
    return summary, fix


#: The filters that rule a node out for the pods already there, with what a user would change.
_POD_RULES = {
    EXISTING_ANTI_AFFINITY: ("pods there (running, or placed earlier by these manifests) have a required "
                             "anti-affinity term that matches its labels",
                             "change its labels or their podAntiAffinity, or add nodes in another domain of "
                             "that term's topologyKey"),
    ANTI_AFFINITY: ("its required podAntiAffinity matches pods already in those nodes' domains",
                    "loosen its podAntiAffinity (preferred instead of required, or a narrower topologyKey), or "
                    "add nodes in domains without such pods"),
    AFFINITY: ("its required podAffinity finds no matching pod in those nodes' domains",
               "run the pods it must be near first, or make its podAffinity preferred"),
    SPREAD: ("another pod would break its topology spread constraint's maxSkew there",
             "raise maxSkew, use whenUnsatisfiable: ScheduleAnyway, or add nodes in the domains that have "
             "fewer of its pods"),
}


def _pod_rules(message: str, where: str, w: PodWorkload) -> tuple[str, str] | None:
    """A pod ruled out by where other pods are, not by room: which rule, and what to change."""
    found = [(reason, why, fix) for reason, (why, fix) in _POD_RULES.items() if reason in message]
    if not found:
        return None
    summary = f"where other pods are, not room, rules out the {where} it may use: " + "; ".join(
        f"{why} ({reason})" for reason, why, _ in found)
    return summary, "; or ".join(fix for _, _, fix in found) + f" ({w.key})"


def _capacity_fix(w: PodWorkload, outcome, need: str) -> str:
    field = w.counts[0][0] if w.counts else "the pod count"
    fewer = f"set {field} of {w.key} to {outcome.placed}" if outcome.placed else f"make {w.key} ask for less"
    return f"{fewer}, or add nodes it may use: {outcome.pending} more pod(s) need {need} each"


def _unmatched_labels(w: PodWorkload, nodes: Sequence[Node]) -> Blocked | None:
    """The nodeSelector entries (and required node affinity `In` values) that no node carries at all."""
    import difflib

    wanted = [(k, [str(v)]) for k, v in (w.spec.get("nodeSelector") or {}).items()]
    node_affinity = (w.spec.get("affinity") or {}).get("nodeAffinity") or {}
    required_selector = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    required: Sequence[dict] = required_selector.get("nodeSelectorTerms") or ()
    if len(required) == 1:  # with several terms (ORed) no single one is required
        wanted += [(e.get("key"), [str(v) for v in e.get("values") or ()])
                   for e in required[0].get("matchExpressions") or () if e.get("operator") == "In"]
    for key, values in wanted:
        carried = sorted({n.labels[key] for n in nodes if key in n.labels})
        if any(v in carried for v in values):
            continue
        asked = " or ".join(f"{key}={v}" for v in values)
        if not carried:
            return Blocked(f"no node has the label {key} (asked: {asked})",
                           f"select a label the nodes carry, or label the nodes {key}")
        close = [m for v in values for m in difflib.get_close_matches(v, carried, n=1, cutoff=0.6)]
        shown = ", ".join(carried[:8]) + (f" and {len(carried) - 8} more" if len(carried) > 8 else "")
        fix = (f"select {key}: {close[0]} (the value the nodes carry)" if close else
               f"select one of the values the nodes carry, or label the nodes {asked}")
        return Blocked(f"no node has {asked}; the nodes carry {key}: {shown}", fix)
    return None


def _describe(snap: Snapshot, eligible: np.ndarray) -> str:
    products = np.unique(snap.domains(PRODUCT)[eligible])  # -1: no product label
    count = len(eligible)
    noun = "node" if count == 1 else "nodes"
    if len(products) == 1 and products[0] >= 0:
        return f"{count} {snap.nodes[int(eligible[0])].labels[PRODUCT]} {noun}"
    return f"{count} {noun}"


def _verb(one: bool, singular: str, plural: str) -> str:
    """The verb that agrees with its subject: one thing, or several."""
    return singular if one else plural


def _names(blockers: Sequence[Blocker], total: int | None = None) -> str:
    """The first few workloads with their pod counts, and how many more there are (of `total`)."""
    shown = [f"{b.workload} ({b.pods})" for b in blockers[:_SHOWN]]
    more = (len(blockers) if total is None else total) - len(shown)
    if more <= 0:
        return ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else "".join(shown)
    return ", ".join(shown) + f" and {more} more workload{'s' if more > 1 else ''}"


def _selects(w: PodWorkload, key: str) -> bool:
    if key in (w.spec.get("nodeSelector") or {}):
        return True
    required = ((((w.spec.get("affinity") or {}).get("nodeAffinity") or {})
                 .get("requiredDuringSchedulingIgnoredDuringExecution")) or {})
    terms = required.get("nodeSelectorTerms") or ()
    return any(e.get("key") == key for t in terms for e in t.get("matchExpressions") or ())


def _request(requests: dict[str, int]) -> str:
    parts = []
    for r, v in sorted(requests.items(), key=lambda e: ("/" not in e[0], e[0])):
        if not v or r == "pods":
            continue
        if r == "cpu":
            parts.append(f"cpu {v}m" if v % 1000 else f"cpu {v // 1000}")
        elif r in ("memory", "ephemeral-storage"):
            parts.append(f"{r} {v / 2**30:.4g}Gi")
        else:
            parts.append(f"{r} {v}")
    return ", ".join(parts) or "nothing"
