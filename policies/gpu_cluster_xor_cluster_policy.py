"""gpu-cluster-xor-cluster-policy: a cluster has a GPUCluster (the DRA stack) or a ClusterPolicy, never both.

gpu-operator v26.7.0 refuses to reconcile a GPUCluster while any ClusterPolicy exists, and its chart
fails to render both from one release. Counted over the gpu-operator releases (`clusterPolicy.deployCR`,
default true; `gpuCluster.deployCR`, default false) and ClusterPolicy / GPUCluster objects of the stack.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from policies._dra import dra_facts


def validate(args: StackValidationArgs, report_violation) -> None:
    facts = dra_facts(args.resources)
    if not facts.gpu_clusters or not facts.cluster_policies:
        return
    policies = ", ".join(s.where for s in facts.cluster_policies)
    for cluster in facts.gpu_clusters:
        report_violation(f"{cluster.where} deploys a GPUCluster, but {policies} deploys a ClusterPolicy: the operator "
                         "does not reconcile a GPUCluster while a ClusterPolicy exists. Expected exactly one of them "
                         "(clusterPolicy.deployCR: false beside gpuCluster.deployCR: true).", cluster.urn)


POLICY = StackValidationPolicy(
    name="gpu-cluster-xor-cluster-policy",
    description="A stack deploys a GPUCluster or a ClusterPolicy, never both.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={}),
    validate=validate,
)
