"""MIG profile tables and geometry checks (NVIDIA MIG User Guide, "Supported MIG Profiles", driver 580).

A GPU instance occupies `memory_slices` consecutive memory slices starting at one of `starts`, and
`compute_slices` of the GPU's compute slices. A geometry (profile -> count for one GPU) is valid when
every profile exists for the product, no count exceeds the profile's maximum, compute slices add up to
at most the GPU's total, and a non-overlapping placement of all instances exists on the memory axis.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile of one product family."""

    name: str
    compute_slices: int
    memory_slices: int
    starts: tuple[int, ...]
    max_count: int
    memory_mib: int


@dataclass(frozen=True)
class MigTable:
    """The MIG profiles of one product family."""

    name: str
    memory_slices: int
    compute_slices: int
    profiles: dict[str, MigProfile]


def _eight_slice(name: str, small: str, double: str, two: str, three: str, four: str, seven: str,
                 mib: tuple[int, int, int, int, int], me: bool = True) -> MigTable:
    """The shape shared by A100, H100, H200, B200: 8 memory slices, 7 compute slices."""
    one, dbl, half, quarter_full, full = mib
    profiles = [
        MigProfile(small, 1, 1, (0, 1, 2, 3, 4, 5, 6), 7, one),
        MigProfile(double, 1, 2, (0, 2, 4, 6), 4, dbl),
        MigProfile(two, 2, 2, (0, 2, 4), 3, dbl),
        MigProfile(three, 3, 4, (0, 4), 2, half),
        MigProfile(four, 4, 4, (0,), 1, quarter_full),
        MigProfile(seven, 7, 8, (0,), 1, full),
    ]
    if me:
        profiles.append(MigProfile(small + "+me", 1, 1, (0, 1, 2, 3, 4, 5, 6), 1, one))
    return MigTable(name, 8, 7, {p.name: p for p in profiles})


TABLES: dict[str, MigTable] = {
    # Memory figures: A100-40GB from the go-nvml A100 mock / GFD docs; H100 NVL from `nvidia-smi mig -lgip`;
    # the others scale the published slice size (GB in the name, decimal) to MiB.
    "A100-40GB": _eight_slice("A100-40GB", "1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb",
                              (4864, 9856, 19968, 19968, 40192)),
    "80GB": _eight_slice("80GB", "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
                         (9728, 19968, 40192, 40192, 80384)),
    "H100-NVL": _eight_slice("H100-NVL", "1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb",
                             (11008, 22144, 47488, 47488, 95360)),
    "H100-96GB": _eight_slice("H100-96GB", "1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb",
                              (11264, 22784, 46080, 46080, 92160)),
    "H200": _eight_slice("H200", "1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb",
                         (16384, 32768, 67584, 67584, 134144)),
    "B200": _eight_slice("B200", "1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb",
                         (21504, 43008, 86016, 86016, 172032)),
    "A30": MigTable("A30", 4, 4, {
        "1g.6gb": MigProfile("1g.6gb", 1, 1, (0, 1, 2, 3), 4, 5952),
        "1g.6gb+me": MigProfile("1g.6gb+me", 1, 1, (0, 1, 2, 3), 1, 5952),
        "2g.12gb": MigProfile("2g.12gb", 2, 2, (0, 2), 2, 11968),
        "2g.12gb+me": MigProfile("2g.12gb+me", 2, 2, (0, 2), 1, 11968),
        "4g.24gb": MigProfile("4g.24gb", 4, 4, (0,), 1, 24192),
    }),
}

#: Media-extension profiles (`+me`): they own the GPU's single set of media engines (NVDEC, NVJPG, OFA),
#: so one GPU holds at most one `+me` instance in total, whichever `+me` profile it is.
_ME_SUFFIX = "+me"
MAX_MEDIA_EXTENSION_INSTANCES = 1


def is_media_extension(profile: str) -> bool:
    return _ME_SUFFIX in profile


def table_for(table_name: str) -> MigTable:
    return TABLES[table_name]


def resource_name(profile: str) -> str:
    """The extended resource a profile is served as under the mixed strategy (`+` becomes `.`)."""
    return "nvidia.com/mig-" + profile.replace("+", ".")


def check_geometry(table: MigTable, devices: dict[str, int]) -> list[str]:
    """Problems with one GPU's MIG geometry (profile -> count); empty when it can be applied.

    Messages name the profile, the bad number and the allowed range or names.
    """
    problems: list[str] = []
    allowed = ", ".join(table.profiles)
    for name, count in devices.items():
        profile = table.profiles.get(name)
        if profile is None:
            problems.append(f"'{name}' is not a MIG profile of {table.name} GPUs; allowed: {allowed}")
        elif count < 0:
            problems.append(f"'{name}': count {count} is negative")
        elif count > profile.max_count:
            problems.append(f"'{name}': {count} instances requested, at most {profile.max_count} fit on one GPU")
    me = {n: c for n, c in devices.items() if is_media_extension(n) and c > 0}
    if not problems and sum(me.values()) > MAX_MEDIA_EXTENSION_INSTANCES:
        shown = ", ".join(f"{c}x '{n}'" for n, c in sorted(me.items()))
        problems.append(f"{shown}: {sum(me.values())} media-extension (+me) instances requested, at most "
                        f"{MAX_MEDIA_EXTENSION_INSTANCES} fits on one GPU (it owns the GPU's media engines)")
    if problems:
        return problems
    if sum(devices.values()) == 0:
        return ["a MIG-enabled GPU needs at least one instance with a count above 0"]
    compute = sum(table.profiles[n].compute_slices * c for n, c in devices.items())
    if compute > table.compute_slices:
        return [f"the instances use {compute} compute slices, a {table.name} GPU has {table.compute_slices}"]
    if not _placeable(table.name, tuple(sorted(devices.items()))):
        shown = ", ".join(f"{c}x {n}" for n, c in devices.items() if c)
        return [f"{shown} cannot be placed together on one {table.name} GPU (memory-slice placements overlap)"]
    return []


@lru_cache(maxsize=1024)
def _placeable(table_name: str, devices: tuple[tuple[str, int], ...]) -> bool:
    """Is there a non-overlapping placement of all instances? Small exact search (at most 7 instances)."""
    table = TABLES[table_name]
    instances = sorted(
        (table.profiles[n] for n, c in devices for _ in range(c)), key=lambda p: -p.memory_slices
    )

    def place(i: int, used: frozenset[int]) -> bool:
        if i == len(instances):
            return True
        p = instances[i]
        for start in p.starts:
            span = frozenset(range(start, start + p.memory_slices))
            if max(span) < table.memory_slices and not span & used and place(i + 1, used | span):
                return True
        return False

    return place(0, frozenset())


def profile_memory_mib(product, profile: str) -> int | None:
    """A MIG profile's memory from a product's table (gpufleet.nvidia.products.GpuProduct); None for an
    unknown product or profile."""
    if product is None or product.mig_table is None:
        return None
    entry = TABLES[product.mig_table].profiles.get(profile)
    return entry.memory_mib if entry else None
