"""Benchmarks and evaluations of the aligner, each run from the repository root as
``python -m benchmarks.ROOM.NAME`` (results: docs/results.md). Not part of the installed package."""
