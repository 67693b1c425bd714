"""For any claim the config accepts, what gpufleet renders is accepted by Kubernetes 1.34's schemas and
its selectors are CEL that compiles, keeping a product name one string literal whatever it holds."""

from __future__ import annotations

import copy

import celpy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.config.loading import parse_sections
from gpufleet.errors import ConfigError
from gpufleet.render.claims import claim_template, named_claims, selectors
from gpufleet.validation.kube import validate_documents
from tests.dra.test_dra_config import base

choices = st.fixed_dictionaries({}, optional={
    "deviceClass": st.sampled_from(["gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"]),
    "count": st.integers(1, 32),
    "allocationMode": st.sampled_from(["ExactCount", "All"]),
    "product": st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=20),
    "minMemory": st.sampled_from(["80G", "40Gi", "1.5Ti", "512Mi"]),
    "profile": st.sampled_from(["1g.5gb", "3g.40gb", "1g.10gb+me"]),
})
claims = st.one_of(
    choices.map(lambda c: {**c, "sameAttribute": "resource.kubernetes.io/pcieRoot"} if c.get("count", 1) > 1 else c),
    st.lists(choices, min_size=1, max_size=3).map(lambda alts: {"firstAvailable": alts}))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claim=claims)
def test_accepted_claims_render_valid_resource_objects_with_compiling_selectors(claim):
    s = copy.deepcopy(base())
    s["workloads"][0]["gpu"] = {"claim": claim}
    s["claims"][0] = {"name": "shared", **claim, "sharing": {"strategy": "MPS", "defaultActiveThreadPercentage": 50}}
    s["draDriver"]["featureGates"] = {"MPSSupport": True}
    try:
        cfg = parse_sections(s, "Pulumi.t.yaml")
    except ConfigError:
        return  # refused with a config error: nothing is rendered
    w = cfg.workloads[0]
    objects = [*claim_template(w, {}), *named_claims(cfg)]
    assert validate_documents(objects, "1.34") == []
    env = celpy.Environment()
    parts = w.gpu.claim.first_available or [w.gpu.claim]
    for part in parts:
        for expression in selectors(part):
            env.compile(expression)
        if part.product is not None:
            (product_selector, *_) = selectors(part)
            tree = env.compile(product_selector)
            program = env.program(tree)
            device = celpy.json_to_cel({"attributes": {"gpu.nvidia.com": {"productName": part.product}}})
            assert program.evaluate({"device": device}) == celpy.celtypes.BoolType(True)
