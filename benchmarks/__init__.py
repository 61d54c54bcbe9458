"""Scriba's benchmark suites: `python -m benchmarks --help` lists them (benchmarks/README.md)."""
