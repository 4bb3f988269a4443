"""Where a run came from: git commit, package versions, timestamps."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import subprocess

from memorybench import CONF_DIR, PROJECT_ROOT

PACKAGES = ("memorybench", "hydra-core", "omegaconf", "openai", "nltk", "pydantic", "llama-cpp-python")


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the checkout memorybench runs from, or (None, None) outside git."""
    if CONF_DIR.parent != PROJECT_ROOT:
        return None, None  # an installed wheel, not a checkout: a git repo around it is not ours
    try:
        commit = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
        return commit, bool(status.strip())
    except (OSError, subprocess.SubprocessError):
        return None, None


def package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions
