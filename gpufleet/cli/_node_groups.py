"""Where `--node-groups` reads node groups: a file (a list of groups, or kubectl's output of Cluster API objects),
or, as `--node-groups cluster`, the live cluster's Cluster API MachineDeployments and MachineSets
(docs/autoscaling.md). Shared by check and headroom, so both read the same groups."""

from __future__ import annotations

import sys
from pathlib import Path

from gpufleet.errors import InputError

#: The `--node-groups` value that reads the live cluster's Cluster API objects.
LIVE = "cluster"


def read_groups(source: Path, nodes: list, live=None) -> list:
    """The node groups `--node-groups SOURCE` names; InputError for bad input. From the live cluster, [] when it
    has none (no Cluster API, none annotated, or none the credentials may list), with a warning on stderr."""
    from gpufleet.autoscaler.nodegroups import read_node_groups

    if str(source) != LIVE:
        return read_node_groups(source, nodes)
    if source.exists():
        raise InputError(f"--node-groups {LIVE} reads the live cluster's Cluster API node groups, but there is also "
                         f"a file named {LIVE} here: give the file with its directory (e.g. $PWD/{LIVE}), or move it")
    if live is None or not hasattr(live, "cluster_api"):
        raise InputError(f"--node-groups {LIVE} reads the live cluster's Cluster API node groups (--kubeconfig, "
                         "--context); with --nodes or --stack give them as a file instead: `kubectl get "
                         "machinedeployments,machinesets,machines -A -o json > groups.json`")
    from gpufleet.autoscaler.clusterapi import MAX_SIZE, node_groups_from_cluster_api

    before = len(getattr(live, "warnings", ()))
    objects, machines_listed = live.cluster_api()
    where = getattr(live, "server", "") or "the cluster"
    for warning in dict.fromkeys(live.warnings[before:]):
        print(f"warning: {warning}", file=sys.stderr)
    groups = node_groups_from_cluster_api(objects, nodes, where, machines_listed)
    if not groups:
        print(f"warning: --node-groups {LIVE}: {where} has no Cluster API node groups (no MachineDeployment or "
              f"MachineSet with a {MAX_SIZE} annotation above 0, or no cluster.x-k8s.io API): the answer is without "
              "scale-up", file=sys.stderr)
    return groups
