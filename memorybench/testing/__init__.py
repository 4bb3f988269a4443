"""Plumbing for tests and benchmarks: scripted servers that speak real HTTP on 127.0.0.1."""
