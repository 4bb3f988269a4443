"""Shared fixtures. Pinned third-party files come from ../shared/pins (never the network)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
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
    from memorybench.benchmarks.locomo.data import load_locomo

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


@dataclass
class CliOutcome:
    returncode: int
    stdout: str
    stderr: str


def cli_in_process(args: Sequence[str], cwd: Path | None = None) -> CliOutcome:
    """`memorybench ARGS` through `memorybench.cli.main` in this process, from `cwd`, as the
    console script runs it (a subprocess spends seconds of CPU importing the stages): its exit
    code and what it printed. An exception that escapes `main` is the traceback a user would
    see, written to stderr as one `Traceback (escaped the CLI): ...` line."""
    from memorybench.cli import main

    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as e:  # Hydra's app and argparse end with sys.exit, as the console would
                code = e.code if isinstance(e.code, int) else 1
            except BaseException as e:  # noqa: BLE001 - whatever escapes the CLI is the traceback shown
                err.write("Traceback (escaped the CLI): " + "".join(traceback.format_exception_only(type(e), e)))
                code = 1
    finally:
        os.chdir(here)
    return CliOutcome(code, out.getvalue(), err.getvalue())


def scripted_reader(base_url: str, model: str = "scripted") -> list[str]:
    return ["reader=openai_compatible", f"reader.base_url={base_url}", f"reader.model={model}"]
