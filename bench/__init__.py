"""Benchmarks. Run them all with ``python -m bench`` (see bench/README.md); not part of pytest."""
