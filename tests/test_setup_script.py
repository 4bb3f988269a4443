"""setup.sh as a user sees it, with pip, npm and memorybench replaced by stubs (nothing is
installed): one line per step, pip's output kept in .venv/setup.log and shown only when a
step fails, and a last line naming README's main command (issue 30, item 3)."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

from conftest import REPO

NOISE = "".join(f"BuildBackendWarning: Package 'memorybench._conf.x{i}' is absent\n" for i in range(740))


def _stub(path: Path, body: str) -> None:
    path.write_text("#!/usr/bin/env bash\n" + body, "utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _checkout(tmp_path: Path, pip_fails: bool = False) -> tuple[Path, dict[str, str]]:
    """A folder with setup.sh, a .venv whose python and memorybench are stubs, npm and chromium on PATH."""
    root = tmp_path / "checkout"
    (root / ".venv" / "bin").mkdir(parents=True)
    shutil.copy2(REPO / "setup.sh", root / "setup.sh")
    _stub(
        root / ".venv" / "bin" / "python",
        f"cat <<'X'\n{NOISE}X\n"
        + ('[[ "$*" == *"-e .[local"* ]] && { echo "error: llama.cpp build died"; exit 1; }\n' if pip_fails else "")
        + "exit 0\n",
    )
    _stub(root / ".venv" / "bin" / "memorybench", "echo ok data/locomo10.json; echo pins verified in /somewhere\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stub(bin_dir / "npm", "echo npm noise; exit 0\n")
    _stub(bin_dir / "chromium", "exit 0\n")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    return root, env


def _main_command() -> str:
    """README's main command, as its first code block gives it."""
    (line,) = [row for row in (REPO / "README.md").read_text("utf-8").splitlines() if "# main job" in row]
    return line.split("#", 1)[0].strip()


def test_setup_prints_a_line_per_step_and_ends_with_the_main_command(tmp_path):
    root, env = _checkout(tmp_path)
    result = subprocess.run(["bash", "setup.sh"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert len(lines) <= 8 and all(row.startswith("setup.sh: ") for row in lines), lines
    assert "BuildBackendWarning" not in result.stdout + result.stderr
    assert lines[-1] == f"setup.sh: done. The main command: {_main_command()}"
    assert "BuildBackendWarning" in (root / ".venv" / "setup.log").read_text("utf-8")  # kept, not lost


def test_a_failed_step_shows_its_log(tmp_path):
    root, env = _checkout(tmp_path, pip_fails=True)
    result = subprocess.run(["bash", "setup.sh"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "setup.sh: failed: installing memorybench" in result.stderr and "llama.cpp build died" in result.stderr
    assert "The main command" not in result.stdout


def test_readme_and_setup_sh_give_the_same_build_time():
    figure = re.compile(r"about (\d+) to (\d+) minutes")
    readme = figure.findall(" ".join((REPO / "README.md").read_text("utf-8").split()))
    setup = figure.findall(" ".join((REPO / "setup.sh").read_text("utf-8").split()))
    assert readme and setup and set(setup) == {readme[0]}, (readme, setup)
