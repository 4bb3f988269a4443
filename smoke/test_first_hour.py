"""A newcomer's first hour, walked on a fresh clone as README.md says (issue 30).

Run by `.ci/run` after the README test command (it takes minutes: a real set-up and a real
run on the embedded model), or by hand:

    MEMORYBENCH_PINS=../shared/pins .venv/bin/python -m pytest -n 0 smoke/test_first_hour.py

The clone is `git clone` of this checkout's committed HEAD, in a temp folder, with a user
cache of its own (XDG_CACHE_HOME: no pinned file, no NLTK data from earlier runs; pip's and
npm's caches stay the machine's, so llama.cpp is not compiled again). The pins folder is
given to `setup.sh` only, as README says; every later command runs without it, as a user's
next shell would. The tests run in file order, each a README step, each on what the step
before left.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PINS = os.environ.get("MEMORYBENCH_PINS") or str(REPO.parent / "shared" / "pins")

pytestmark = pytest.mark.skipif(
    not (Path(PINS) / "data").is_dir(), reason=f"needs a pins folder (MEMORYBENCH_PINS; {PINS} has no data/)"
)


class Clone:
    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root, self.env = root, env

    def run(self, line: str, *, ok: bool = True, timeout: float = 600, **extra: str) -> subprocess.CompletedProcess:
        """One README line in the clone's folder, as bash runs it; its output on failure."""
        done = subprocess.run(
            ["bash", "-c", line],
            cwd=self.root,
            env={**self.env, **extra},
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if ok:
            assert done.returncode == 0, f"{line}: exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        return done

    def readme_line(self, marker: str) -> str:
        """The command of README's first code block whose comment holds `marker`."""
        (line,) = [text for text in (self.root / "README.md").read_text("utf-8").splitlines() if marker in text]
        return line.split("#", 1)[0].strip()


def _machine_caches() -> dict[str, str]:
    """pip's and npm's caches as this machine has them (a new XDG_CACHE_HOME would move pip's)."""
    pip = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-m", "pip", "cache", "dir"], capture_output=True, text=True
    ).stdout.strip()
    return {"PIP_CACHE_DIR": pip} if pip else {}


@pytest.fixture(scope="module")
def clone() -> Iterator[Clone]:
    top = Path(tempfile.mkdtemp(prefix="first-hour-"))
    try:
        root = top / "memorybench"
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(root)], check=True, timeout=300)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYBENCH_", "VIRTUAL_ENV", "PYTEST"))}
        env.update(_machine_caches(), XDG_CACHE_HOME=str(top / "user-cache"), TMPDIR=str(top / "tmp"))
        (top / "tmp").mkdir()
        yield Clone(root, env)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_setup_with_a_pins_folder_ends_with_the_main_command(clone):
    setup = clone.readme_line("# once:")
    assert setup == "./setup.sh"
    done = clone.run(setup, timeout=1800, MEMORYBENCH_PINS=PINS)
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert all(text.startswith("setup.sh: ") for text in lines), lines  # one line per step, pip's noise in the log
    assert lines[-1] == f"setup.sh: done. The main command: {clone.readme_line('# main job')}"
    # the user cache is complete: the pins were copied, not only verified where they lay
    cache = Path(clone.env["XDG_CACHE_HOME"]) / "memorybench" / "pins"
    assert (cache / "data" / "locomo10.json").is_file() and (cache / "nltk_data").is_dir()


def test_the_main_command_runs_the_embedded_model_without_the_pins_variable(clone):
    done = clone.run(clone.readme_line("# main job"), timeout=900)
    out = done.stdout + done.stderr
    assert "loading the model" in out and "prefilling" in out, out[-3000:]  # phases, not a hung 0/20
    assert re.search(r"LoCoMo F1", out) and "local" in out, out[-3000:]
    runs = list((clone.root / "outputs" / "packs" / "default" / "runs").iterdir())
    assert len(runs) == 1 and (runs[0] / "_SUCCESS").is_file() and (runs[0] / "TRACE.md").is_file()


def test_the_same_command_again_reruns_nothing_and_says_so(clone):
    done = clone.run(clone.readme_line("# main job"), timeout=300)
    assert "is complete; nothing to do" in done.stderr, done.stderr
    assert len(list((clone.root / "outputs" / "packs" / "default" / "runs").iterdir())) == 1


def test_ls_lists_the_run_and_latest_names_it_everywhere(clone):
    (run,) = (clone.root / "outputs" / "packs" / "default" / "runs").iterdir()
    listed = clone.run(".venv/bin/memorybench ls").stdout
    assert run.name in listed and "session_summaries" in listed
    brief = clone.run(".venv/bin/memorybench show latest conv-26-q-0 --brief").stdout
    assert "conv-26-q-0" in brief and "gold" in brief.lower(), brief
    clone.run(".venv/bin/memorybench verify latest")
    before = (run / "predictions.csv").read_bytes()
    clone.run(".venv/bin/memorybench rescore latest")
    assert (run / "predictions.csv").read_bytes() == before  # rescoring a pack gives it back byte for byte


def test_a_typo_gets_the_right_key_at_once_and_never_a_plus(clone):
    key = clone.run(".venv/bin/memorybench plan memory=rag memory.topk=3", ok=False)
    assert key.returncode != 0 and "top_k" in key.stderr and "+memory.topk" not in key.stderr, key.stderr
    assert len(key.stderr.strip().splitlines()) == 1 and "Traceback" not in key.stderr
    group = clone.run(".venv/bin/memorybench plan memroy=rag", ok=False)
    assert group.returncode != 0 and "memory" in group.stderr and "+memroy" not in group.stderr, group.stderr


def test_report_takes_the_packs_and_conditions_on_the_command_line(clone):
    out = clone.root / "outputs" / "reports" / "first-hour"
    clone.run(f".venv/bin/memorybench report --packs outputs/packs/default --conditions choice.memory --out {out}")
    assert any(p.suffix == ".md" for p in out.rglob("*")), sorted(p.name for p in out.rglob("*"))


def test_track_logs_to_mlflow_and_prints_the_runs_link(clone):
    done = clone.run(".venv/bin/memorybench track outputs/packs/default", timeout=300)
    assert re.search(r"http://127\.0\.0\.1:5000/#/experiments/\d+", done.stdout + done.stderr), done.stdout + done.stderr
    assert (clone.root / "outputs" / "mlflow.db").is_file()


def test_the_peers_results_come_from_the_pins_folder_into_the_user_cache(clone):
    done = clone.run(".venv/bin/memorybench fetch --peers", MEMORYBENCH_PINS=PINS)
    assert "peers" in done.stdout
    assert any((Path(clone.env["XDG_CACHE_HOME"]) / "memorybench" / "pins" / "peers").rglob("*.json"))
