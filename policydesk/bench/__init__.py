"""Hand-run performance benchmarks. Not part of the test suite; see docs/performance.md."""
