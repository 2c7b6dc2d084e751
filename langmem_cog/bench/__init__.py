"""Benchmark protocols and paired comparisons for langmem-cog retrieval."""
