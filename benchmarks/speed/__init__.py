"""speed benchmarks (python -m benchmarks.speed.NAME; results: docs/results.md)."""
