"""Dynamic Resource Allocation in `gpufleet check`: DRA objects, CEL selectors, the structured allocator."""
