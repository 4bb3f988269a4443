"""Tests of memorybench.score (a package so its test_locomo.py does not collide with tests/data/test_locomo.py)."""
