"""Azure facts gpufleet plans with (pure tables, no Azure SDK imports)."""
