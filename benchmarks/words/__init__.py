"""words benchmarks (python -m benchmarks.words.NAME; results: docs/results.md)."""
