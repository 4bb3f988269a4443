"""Every command's --help exits 0 with our own text; `qa --help` and `plan --help` list the
config groups and their options from conf/ (no schema node, no Hydra page)."""

from __future__ import annotations

import pytest

from memorybench import CONF_DIR
from memorybench.cli import COMMANDS, main
from memorybench.help import config_groups


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_help_exits_0(command, capsys):
    try:
        code = main([command, "--help"])
    except SystemExit as e:  # argparse's --help
        code = e.code
    out = capsys.readouterr().out
    assert code == 0 and f"memorybench {command}" in out
    assert "powered by Hydra" not in out and "Traceback" not in out


@pytest.mark.parametrize("command", ["qa", "plan"])
def test_qa_and_plan_help_list_every_group_and_option(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    groups = config_groups(CONF_DIR)
    assert {"memory", "reader", "answerer", "experiment"} <= set(groups) and "analysis" not in groups
    for group, options in groups.items():
        line = next(x for x in out.splitlines() if x.strip().startswith(group + " "))
        assert all(option in line for option in options) and "_schema" not in line
    assert "memory.top_k" in out and "paths.packs" in out and "memorybench qa memory=session_summaries" in out


def test_top_level_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("memorybench: ") and "Console entry point" not in out
    for command in COMMANDS:
        assert f"memorybench {command}" in out, command


def test_help_into_a_closed_pipe_ends_quietly_with_sigpipes_status(tmp_path):
    """`memorybench --help | head -3`: the usage text is printed inside the CLI's handlers too."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the child writes a byte
    done = subprocess.run(
        [sys.executable, "-m", "memorybench.cli", "--help"], cwd=tmp_path, stdout=write, stderr=subprocess.PIPE, timeout=120
    )
    os.close(write)
    assert done.returncode == 141 and done.stderr == b"", done.stderr.decode()
