"""Packaging glue that pyproject.toml cannot say: every package `packages.find` would find,
plus conf/ and prompts/ as `memorybench._conf` and `memorybench._prompts` (mapped in
pyproject.toml's [tool.setuptools.package-dir]). Everything else is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

DATA_PACKAGES = ["memorybench._conf", "memorybench._prompts"]

setup(packages=[*find_namespace_packages(include=["memorybench", "memorybench.*"]), *DATA_PACKAGES])
