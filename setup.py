"""Packaging glue that pyproject.toml cannot say: every package `packages.find` would find,
plus conf/ and prompts/ as `memorybench._conf` and `memorybench._prompts` (mapped in
pyproject.toml's [tool.setuptools.package-dir]), each of their folders declared as a package
of its own so that setuptools has nothing to warn about ("Package 'memorybench._conf.memory'
is absent from the packages configuration"). conf/local/ (one machine's overrides) is left
out. Everything else is in pyproject.toml."""

from pathlib import Path

from setuptools import find_namespace_packages, setup

HERE = Path(__file__).resolve().parent
DATA_TREES = {"memorybench._conf": "conf", "memorybench._prompts": "prompts"}


def data_packages() -> list[str]:
    """`memorybench._conf`, `memorybench._conf.memory`, ...: one per folder of conf/ and prompts/."""
    packages = []
    for package, folder in DATA_TREES.items():
        root = HERE / folder
        packages.append(package)
        for sub in sorted(p for p in root.rglob("*") if p.is_dir()):
            parts = sub.relative_to(root).parts
            if parts[0] == "local" and folder == "conf" or any(part.startswith((".", "_")) for part in parts):
                continue
            packages.append(".".join((package, *parts)))
    return packages


setup(packages=[*find_namespace_packages(include=["memorybench", "memorybench.*"]), *data_packages()])
