"""`gpufleet plan`: run the Pulumi program offline under the mock engine and write what it would create."""
