"""Benchmarks: each module prints JSON and writes its figures to ``bench/results/``."""
