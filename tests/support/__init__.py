"""Test helpers shared by tests and benchmarks (local fake servers)."""
