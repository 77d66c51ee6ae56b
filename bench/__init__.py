"""Benchmarks for Sluicegate (not tests: speed targets live here, never in ``tests/``)."""
