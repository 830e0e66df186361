"""Hand-run performance benchmarks (issue 8). Not part of the test suite; see docs/performance.md."""
