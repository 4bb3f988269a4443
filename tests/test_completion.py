"""`memorybench completion bash|zsh|fish`: the bash script sourced in a real bash, asked for
completions as bash asks (COMP_LINE, COMP_POINT, COMP_WORDS, COMP_CWORD); Hydra's completion
of the qa app under the `memorybench qa` prefix."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from memorybench.cli import COMMANDS, main
from memorybench.completion import completion_script, hydra_line
from memorybench.help import config_groups

BASH = shutil.which("bash")
#: bash's own default
WORDBREAKS = "\"'><=;|&(:"


@pytest.fixture(scope="module")
def shim(tmp_path_factory) -> Path:
    """A `memorybench` on PATH that runs this checkout's package with this interpreter."""
    folder = tmp_path_factory.mktemp("bin")
    program = folder / "memorybench"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m memorybench.cli "$@"\n')
    program.chmod(0o755)
    return folder


def complete(shim: Path, tmp_path: Path, line: str, *, wordbreaks: str = WORDBREAKS) -> list[str]:
    """COMPREPLY of the sourced script for `line` (the cursor at its end), as bash would call it."""
    script = tmp_path / "completion.bash"
    script.write_text(completion_script("bash", COMMANDS))
    words = line.split() + ([""] if line.endswith(" ") else [])
    program = f"""
        source {script}
        COMP_WORDBREAKS=$1
        COMP_LINE=$2
        COMP_POINT=${{#COMP_LINE}}
        COMP_WORDS=({" ".join(f"'{w}'" for w in words)})
        COMP_CWORD={len(words) - 1}
        _memorybench_completion
        printf '%s\\n' "${{COMPREPLY[@]}}"
    """
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [BASH, "-c", program, "bash", wordbreaks, line], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return [x for x in result.stdout.splitlines() if x]


pytestmark = pytest.mark.skipif(BASH is None, reason="no bash")


def test_commands_complete(shim, tmp_path):
    assert complete(shim, tmp_path, "memorybench ") == sorted(COMMANDS)
    assert complete(shim, tmp_path, "memorybench co") == ["collect-full", "compare", "completion"]
    assert complete(shim, tmp_path, "memorybench completion ") == ["bash", "zsh", "fish"]
    assert complete(shim, tmp_path, "memorybench dev c") == ["cloud-emulators"]
    assert complete(shim, tmp_path, "memorybench dev s") == ["scripted-model"]


@pytest.mark.parametrize("command", ["qa", "plan"])
def test_memory_options_complete_through_hydra(shim, tmp_path, command):
    from memorybench.plugins import config_dirs

    options = config_groups()["memory"]
    assert {"full_context", "rag", "session_summaries"} <= set(options)
    # an installed plugin's memory options complete too (its conf/ joins Hydra's search path)
    plugin_options = sorted(p.stem for d in config_dirs() for p in (d / "memory").glob("*.yaml"))
    # bash breaks words at '=' (its default): it replaces only what follows it
    assert complete(shim, tmp_path, f"memorybench {command} memory=") == sorted({*options, *plugin_options})
    # without '=' in COMP_WORDBREAKS the whole word is replaced
    assert complete(shim, tmp_path, f"memorybench {command} -m memory=r", wordbreaks=" ") == ["memory=rag", "memory=raw_chunks"]


def test_groups_and_keys_complete(shim, tmp_path):
    assert "memory=" in complete(shim, tmp_path, "memorybench qa mem", wordbreaks=" ")
    assert complete(shim, tmp_path, "memorybench qa reader=openai_compatible reader.te", wordbreaks=" ") == [
        "reader.temperature="
    ]
    assert complete(shim, tmp_path, "memorybench qa reader.temperature=") == ["0.0"]


def test_hydra_line_drops_the_command():
    assert hydra_line("memorybench qa memory=") == "memorybench memory="
    assert hydra_line("/x/.venv/bin/memorybench plan -m memory=r") == "memorybench -m memory=r"
    assert hydra_line("memorybench qa ") == "memorybench "
    assert hydra_line("memorybench qa memory=rag reader=", 25) == "memorybench memory=rag"


def test_hydra_install_prints_our_script_and_bare_flag_is_one_line(capsys, tmp_path):
    assert main(["qa", "-sc", "install=bash"]) == 0
    out = capsys.readouterr().out
    assert (
        out == completion_script("bash", COMMANDS)
        and "complete -o nospace -o default -F _memorybench_completion memorybench" in out
    )
    assert "memorybench qa" not in out.splitlines()[-1]
    result = run_cli("qa", "--shell-completion", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "memorybench: error: --shell-completion needs install=bash|zsh|fish (or query=SHELL); "
        "to load completion run `source <(memorybench completion bash)`"
    ]


def test_a_query_is_not_an_override_error(tmp_path):
    result = run_cli("qa", "-sc", "query=bash", cwd=tmp_path, env={"COMP_LINE": "memorybench qa memory=ra", "COMP_POINT": "24"})
    assert result.returncode == 0 and "Error parsing override" not in result.stderr, result.stderr
    assert result.stdout.split() == ["memory=rag", "memory=raw_chunks"]


def test_zsh_and_fish_scripts(capsys):
    assert main(["completion", "zsh"]) == 0
    zsh = capsys.readouterr().out
    assert "bashcompinit" in zsh and "_memorybench_completion" in zsh
    assert main(["completion", "fish"]) == 0
    fish = capsys.readouterr().out
    assert "complete -c memorybench" in fish and "qa -sc query=bash" in fish and " ".join(sorted(COMMANDS)) in fish
