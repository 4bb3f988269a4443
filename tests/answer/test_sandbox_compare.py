"""bench/sandbox_compare.py's verdicts, which docs/design.md (security) quotes to say why our
isolation stays rather than bubblewrap: the same probe as `Isolation.probe`, run under ours,
under the bwrap the Codex CLI ships laid out alike, and under our drop then that bwrap."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="compares the wrappers as root (as in containers and CI)")


def _bench():
    spec = importlib.util.spec_from_file_location("sandbox_compare", REPO / "bench" / "sandbox_compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bubblewrap_alone_keeps_host_root_and_cannot_bridge_the_endpoint_where_ours_holds_every_property():
    scratch = Path(tempfile.mkdtemp(prefix="sandbox-compare-"))
    try:
        scratch.chmod(0o755)  # the drop-first wrapper reaches bound paths as the agent's uid
        results = _bench().compare(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert results["binary"] and results["binary"].endswith("bwrap")
    assert results["ours"] == []
    bridge = [f for f in results["bwrap"] if "not reachable through the bridge" in f]
    # bwrap as root maps the agent to host uid 0 (its files are root's) and has no way into a
    # prepared network namespace, so the endpoint's port is not there
    assert len(bridge) == 1 and "the agent runs as uid 0 of the host" in results["bwrap"] and len(results["bwrap"]) == 2
    # with our setpriv drop first, the uid holds; the bridge still does not: every other property is bwrap's too
    assert results["setpriv + bwrap"] == bridge
