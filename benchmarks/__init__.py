"""Benchmarks, run on demand; results go to docs/benchmarks.md."""
