"""vowels benchmarks (python -m benchmarks.vowels.NAME; results: docs/results.md)."""
