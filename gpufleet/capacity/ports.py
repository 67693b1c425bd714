"""The host ports a pod holds on its node, as kube-scheduler's NodePorts plugin and NodeInfo count them.

A port counts when its `hostPort` is above 0. The app containers' ports count, and so do those of
restartable (sidecar) init containers, which run beside them; an ordinary init container's ports do not
(checked against kube-scheduler v1.34.5). With `hostNetwork: true` the API server's defaulting gives every
container port without a `hostPort` its `containerPort` as host port (SetDefaults_Pod), for init containers
too. An empty `protocol` is TCP and an empty `hostIP` 0.0.0.0, as the scheduler sanitises them.
"""

from __future__ import annotations

from typing import Any

#: (protocol, host IP, host port)
HostPort = tuple[str, str, int]
ALL_ADDRESSES = "0.0.0.0"


def host_ports(spec: Any) -> tuple[HostPort, ...]:
    """The pod's host ports, in container order (duplicates kept: each is checked as the scheduler does).
    Raises TypeError for a port number that is not an integer (shape checks name the field)."""
    if not isinstance(spec, dict):
        return ()
    host_network = spec.get("hostNetwork") is True
    containers = [c for c in spec.get("containers") or () if isinstance(c, dict)]
    containers += [c for c in spec.get("initContainers") or ()
                   if isinstance(c, dict) and c.get("restartPolicy") == "Always"]
    out: list[HostPort] = []
    for container in containers:
        for port in container.get("ports") or ():
            if not isinstance(port, dict):
                continue
            host = port.get("hostPort")
            if host_network and not host:
                host = port.get("containerPort")
            if host is None:
                continue
            if not isinstance(host, int) or isinstance(host, bool):  # the caller reports the field
                raise TypeError(f"a host port must be an integer, not {host!r}")
            if host <= 0:
                continue
            protocol = port.get("protocol") or "TCP"
            address = port.get("hostIP") or ALL_ADDRESSES
            out.append((str(protocol), str(address), host))
    return tuple(out)
