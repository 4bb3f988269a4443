"""The README's commands, as written, answer as described (issue 30: a newcomer follows them).

Every `memorybench ...` line of the README's bash blocks is checked the way it can be
without keys or long runs:

- a `qa` line without placeholders composes: `plan` with the same overrides (and `-m`)
  accepts it, naming each run spec, so a typo or a renamed option in the README fails here;
- every other line names a real command whose `--help` lists each `--flag` the line uses;
- `completion bash` prints a script that bash accepts.

The main job itself (a real QA run on the embedded model) and setup.sh run in CI
(`.ci/run`); tests/test_setup_script.py checks setup.sh's steps.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

REPO = Path(__file__).resolve().parents[1]
#: placeholders a reader replaces: PACK, FILE, NAME, <run_id>, [optional ...], a|b choices
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z0-9_]{2,}\b|<[^>]+>|\[|\|")


def readme_lines() -> list[str]:
    text = (REPO / "README.md").read_text("utf-8")
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            command = command.removeprefix(".venv/bin/")
            if command.startswith("memorybench "):
                lines.append(command)
    return lines


LINES = readme_lines()
QA_LINES = [line for line in LINES if line.split()[1] == "qa" and not PLACEHOLDER.search(line.split(" ", 2)[2])]


def test_the_readme_has_its_main_command_and_commands_to_check():
    assert "memorybench qa memory=session_summaries max_questions=20" in LINES
    assert len(LINES) > 15 and len(QA_LINES) >= 5


@pytest.mark.parametrize("line", QA_LINES)
def test_each_qa_line_composes_as_written(line, tmp_path):
    args = line.split()[2:]
    extra = []
    if "experiment=longmemeval" in args:  # its data is fetched on a user's machine only: a file in its format
        sys.path.insert(0, str(REPO / "tests" / "fixtures"))
        from make_longmemeval import make_longmemeval

        extra = [f"dataset.path={make_longmemeval(tmp_path / 'lme.json', questions=3)}"]
    done = run_cli("plan", *args, *extra, cwd=tmp_path, env={"OPENAI_API_KEY": "sk-test-readme"})
    assert done.returncode == 0, f"{line}: {done.stderr.strip()}"
    assert "run spec(s)" in done.stderr


@pytest.mark.parametrize("line", [line for line in LINES if line.split()[1] not in ("qa", "plan")])
def test_each_other_line_names_a_command_and_flags_it_has(line, tmp_path):
    words = line.split()
    command = words[1]
    sub = [words[2]] if command == "dev" else []
    done = run_cli(command, *sub, "--help", cwd=tmp_path)
    assert done.returncode == 0, f"{line}: {done.stderr.strip()}"
    for flag in {w.strip("[]") for w in words if w.strip("[]").startswith("--")}:
        assert flag in done.stdout, f"{line}: `memorybench {command} --help` does not list {flag}"


def test_completion_prints_a_script_bash_accepts(tmp_path):
    done = run_cli("completion", "bash", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip()
    checked = subprocess.run(["bash", "-n"], input=done.stdout, capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
