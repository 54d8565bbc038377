"""alignment benchmarks (python -m benchmarks.alignment.NAME; results: docs/results.md)."""
