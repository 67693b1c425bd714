"""kube-scheduler v1.34 as gpufleet emulates it, laid out as upstream's pkg/scheduler: one scheduling cycle
(`schedule_one`), the framework that runs a profile's plugins (`framework/`), the in-tree plugins one folder
each (`plugins/`, the DynamicResources plugin and its structured allocator included), and the cluster as a
cycle sees it (`snapshot`, `node_tree`, `classes`, `pods_on_nodes`).

The check driver that feeds pods through it and words its verdicts is gpufleet.scheduling; what the API server
admits before a pod gets here is gpufleet.admission.
"""
