"""The policy pack's entry point (`pulumi preview --policy-pack policies`): only the PolicyPack, which serves
the analyzer over gRPC and blocks. Never imported by tests."""

from pulumi_policy import EnforcementLevel, PolicyPack

from policies import ALL_POLICIES, PACK_NAME

PolicyPack(name=PACK_NAME, policies=ALL_POLICIES, enforcement_level=EnforcementLevel.MANDATORY)
