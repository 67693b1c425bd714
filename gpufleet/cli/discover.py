"""`gpufleet discover`: write the capacity model (capacity.json) from a live cluster, kubectl files or NVML.

Without `--nodes` or `--nvml` it reads the cluster kubectl would read (gpufleet/discovery/live.py); the live
options defined here are shared by `check` and `report`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpufleet.errors import GpufleetError, InputError

if TYPE_CHECKING:  # the sources load when the command runs, so `discover --help` stays fast
    from gpufleet.capacity.model import Capacity
    from gpufleet.discovery.kubernetes import ClusterSource
    from gpufleet.discovery.nvml import GpuInventory


#: The live-cluster options `discover`, `check` and `report` share (kubectl's names and defaults).
KubeconfigOption = Annotated[Path | None, typer.Option(
    "--kubeconfig", help="Read a live cluster through this kubeconfig (default: $KUBECONFIG, a list of files "
                         "merged as kubectl merges them, then ~/.kube/config, then a pod's service account).")]
ContextOption = Annotated[str | None, typer.Option("--context", help="kubeconfig context (default: the current one).")]
RequestTimeoutOption = Annotated[str, typer.Option(
    "--request-timeout", help="How long one request to the API server may wait, as kubectl's (30s, 1m, 0 for "
                              "no limit).")]
ChunkSizeOption = Annotated[int, typer.Option(
    "--chunk-size", min=0, help="Objects per LIST page, as kubectl's (0 reads each list in one request).")]
DEFAULT_TIMEOUT = "30s"
DEFAULT_CHUNK = 500


def live_cluster(kubeconfig: Path | None, context: str | None, request_timeout: str = DEFAULT_TIMEOUT,
                 chunk_size: int = DEFAULT_CHUNK) -> ClusterSource:
    """The live cluster kubectl would read with these options (nothing is contacted yet)."""
    from gpufleet.discovery.live import KubeconfigCluster, parse_request_timeout

    return KubeconfigCluster(kubeconfig, context, request_timeout=parse_request_timeout(request_timeout),
                             chunk_size=chunk_size)


NO_CLUSTER_HINT = "give --kubeconfig FILE, or kubectl files with --nodes FILE [--pods FILE]"


def live_capacity(source: ClusterSource, hint: str = NO_CLUSTER_HINT) -> Capacity:
    """Nodes, bound pods and DRA objects of a live cluster; its warnings (once each) on stderr. `hint`: what
    to give instead when there is no cluster to read."""
    from gpufleet.capacity.kubectl import capacity_from_cluster
    from gpufleet.discovery.live import NoClusterFound

    try:
        cap = _with_dra(capacity_from_cluster(source, "kubernetes"), source)
    except NoClusterFound as e:
        raise InputError(f"{e}; {hint}") from e
    for warning in dict.fromkeys(getattr(source, "warnings", ())):
        print(f"warning: {warning}", file=sys.stderr)
    return cap


def discover(*, kubeconfig: Path | None = None, context: str | None = None, nodes: Path | None = None,
             pods: Path | None = None, nvml: bool = False, cluster: ClusterSource | None = None,
             inventory: GpuInventory | None = None, dra: list[Path] | None = None,
             request_timeout: str = DEFAULT_TIMEOUT, chunk_size: int = DEFAULT_CHUNK) -> Capacity:
    """Pick the one source asked for (a live cluster when no file or NVML is). `cluster` / `inventory` replace
    the real ones (tests)."""
    from gpufleet.capacity.kubectl import capacity_from_cluster
    from gpufleet.capacity.nvml import capacity_from_nvml
    from gpufleet.discovery.kubernetes import FileCluster
    from gpufleet.discovery.nvml import NvmlInventory

    chosen = [s for s, on in (("--kubeconfig", kubeconfig), ("--nodes", nodes), ("--nvml", nvml)) if on]
    if len(chosen) > 1:
        raise InputError(f"choose exactly one source: --kubeconfig PATH, --nodes FILE or --nvml (got "
                         f"{', '.join(chosen)})")
    if context is not None and (nodes is not None or nvml):
        raise InputError("--context goes with a live cluster (--kubeconfig or the current kubeconfig), not with "
                         + ("--nodes" if nodes is not None else "--nvml"))
    if pods is not None and nodes is None:
        raise InputError("--pods goes with --nodes")
    if dra and nodes is None:
        raise InputError("--dra goes with --nodes (--kubeconfig reads the DRA objects from the cluster)")
    if nvml:
        import socket

        return capacity_from_nvml(inventory or NvmlInventory(), socket.gethostname())
    if nodes is not None:
        source = cluster or FileCluster(nodes, pods, tuple(dra or ()))
        return _with_dra(capacity_from_cluster(source, "kubectl"), source)
    return live_capacity(cluster or live_cluster(kubeconfig, context, request_timeout, chunk_size),
                         "choose exactly one source: --kubeconfig PATH, --nodes FILE or --nvml")


def _with_dra(cap: Capacity, source: ClusterSource) -> Capacity:
    """The cluster's DRA objects, type-checked as check reads them, into the capacity model."""
    from gpufleet.capacity.dra import labelled_errors

    objects = source.dra()
    errors = [e for i, obj in enumerate(objects) for e in labelled_errors(obj, f"DRA object {i + 1}")]
    if errors:
        raise InputError("\n".join(errors))
    cap.dra = objects
    if hasattr(source, "admission"):  # a live cluster: what admission reads too
        cap.admission = source.admission()
    return cap


def _capacity_file(text: str) -> bool:
    """An earlier `discover --out`: a JSON object in gpufleet's capacity format (replaced without --force)."""
    from gpufleet.capacity.model import FORMAT

    try:
        doc = json.loads(text)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def command(
    out: Annotated[Path, typer.Option("--out", help="Where to write capacity.json.")],
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    nodes: Annotated[Path | None, typer.Option(
        "--nodes", help="`kubectl get nodes -o json` output (- reads standard input).")] = None,
    pods: Annotated[Path | None, typer.Option(
        "--pods", help="`kubectl get pods -A -o json` output (- reads standard input).")] = None,
    dra: Annotated[list[Path] | None, typer.Option(
        "--dra", help="With --nodes: `kubectl get resourceslices,deviceclasses -o json` and "
                      "`kubectl get resourceclaims -A -o json` output, or DRA objects in YAML as `check` "
                      "reads them (repeat the flag for each file).")] = None,
    nvml: Annotated[bool, typer.Option("--nvml", help="Read this machine's GPUs through NVML.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Replace --out even when it is not a capacity.json gpufleet wrote.")] = False,
    request_timeout: RequestTimeoutOption = DEFAULT_TIMEOUT,
    chunk_size: ChunkSizeOption = DEFAULT_CHUNK,
) -> None:
    """Write the capacity model (nodes, allocatable, bound pods, GPU facts) as JSON."""
    from gpufleet.outdir import check_own_file, write_own_file

    try:
        check_own_file(out, _capacity_file, "capacity.json", force)
        cap = discover(kubeconfig=kubeconfig, context=context, nodes=nodes, pods=pods, nvml=nvml, dra=dra,
                       request_timeout=request_timeout, chunk_size=chunk_size)
        write_own_file(out, json.dumps(cap.to_json(), indent=2) + "\n", _capacity_file, "capacity.json", force)
    except GpufleetError as e:
        print(str(e), file=sys.stderr)  # every problem, one line each
        raise SystemExit(2) from e
    except OSError as e:
        print(f"{out}: cannot write: {e}", file=sys.stderr)
        raise SystemExit(2) from e
    extra = f", {len(cap.dra)} DRA object(s)" if cap.dra else ""
    extra += f", {len(cap.admission)} admission object(s)" if cap.admission else ""
    print(f"{out}: {len(cap.nodes)} node(s), {len(cap.pods)} bound pod(s){extra} from {cap.source}")
