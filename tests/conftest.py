"""Shared fixtures. Pinned third-party files come from ../shared/pins (never the network)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_PINS = REPO.parent / "shared" / "pins"
os.environ.setdefault("MEMORYBENCH_PINS", str(SHARED_PINS))
# no progress lines in the runs tests make (tests/test_progress.py turns them on): stderr holds what a test checks
os.environ["MEMORYBENCH_PROGRESS"] = "off"
PINS = Path(os.environ["MEMORYBENCH_PINS"])
LOCOMO = PINS / "data" / "locomo10.json"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def locomo_path() -> Path:
    if not LOCOMO.is_file():
        pytest.fail(f"{LOCOMO} is missing: tests read the pinned files from ../shared/pins")
    return LOCOMO


@pytest.fixture(scope="session")
def locomo_raw(locomo_path: Path) -> list[dict]:
    return json.loads(locomo_path.read_text("utf-8"))


@pytest.fixture(scope="session")
def conversations(locomo_path: Path):
    from memorybench.data import load_locomo

    return load_locomo(locomo_path)


@pytest.fixture()
def scripted_server() -> Iterator:
    from memorybench.testing.scripted_server import ScriptedOpenAIServer

    with ScriptedOpenAIServer() as server:
        yield server


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the real console entry point in a subprocess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "memorybench.cli", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def scripted_reader(base_url: str, model: str = "scripted") -> list[str]:
    return ["reader=openai_compatible", f"reader.base_url={base_url}", f"reader.model={model}"]
