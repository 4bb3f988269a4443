"""Shell completion: `memorybench completion bash|zsh|fish` prints a script to source.

The script completes the commands (`memorybench.cli.COMMANDS`, passed in by the CLI) itself; after `qa` or `plan`
it asks Hydra's own completion for the qa app (config groups, their options, config keys
and values, files after `key=./`), by running

    COMP_LINE=... COMP_POINT=... memorybench qa -sc query=bash

Hydra's completion knows one app name before the overrides; under `memorybench qa` it would
take `qa` for an override (`Error parsing override 'qa'`). `query()` below rewrites the line
(`memorybench [qa|plan] OVERRIDES` -> `memorybench OVERRIDES`, cut at the cursor) before
Hydra reads it, and `memorybench qa -sc install=SHELL` prints the script of this module
(Hydra's own would register `memorybench qa` as the command's name).

    source <(memorybench completion bash)                  # ~/.bashrc
    source <(memorybench completion zsh)                   # ~/.zshrc (through bashcompinit)
    memorybench completion fish | source                   # ~/.config/fish/config.fish
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence

from memorybench.errors import OneLineParser, UserError

__all__ = ["SHELLS", "completion_main", "completion_script", "hydra_line", "shell_completion"]

SHELLS = ("bash", "zsh", "fish")
#: the commands whose arguments are Hydra overrides of the qa app
HYDRA_COMMANDS = ("qa", "plan")
#: the flags that send a `qa` to this module
FLAGS = ("-sc", "--shell-completion")
#: config-group options that are schema nodes (hidden, as `memorybench qa --help` hides them)
SCHEMA_SUFFIX = "_schema"
#: `memorybench qa|plan REST` (the first word any path to the program) and, failing that, `memorybench REST`
_AFTER_COMMAND = re.compile(r"^\s*\S+\s+(?:%s)(?:\s+|$)(.*)$" % "|".join(HYDRA_COMMANDS), re.S)
_AFTER_APP = re.compile(r"^\s*\S+\s*(.*)$", re.S)

_BASH = r"""# memorybench completion (bash): commands; for qa and plan, Hydra's config groups, options and keys.
# Load it: source <(memorybench completion bash)
_memorybench_completion()
{
    local line="${COMP_LINE:0:COMP_POINT}"
    local cur="${line##*[[:space:]]}"
    local IFS=$' \t\n'
    local -a words=($line)
    local n=${#words[@]}
    [[ -z "$cur" ]] && n=$((n + 1))
    if (( n <= 2 )); then
        COMPREPLY=($(compgen -W "__COMMANDS__" -- "$cur"))
        compopt +o nospace 2>/dev/null
        return 0
    fi
    local -a replies=()
    case "${words[1]}" in
        qa|plan)
            local choices
            choices=$(COMP_LINE="$line" COMP_POINT=${#line} "${words[0]}" qa -sc query=bash 2>/dev/null)
            replies=($(compgen -W "$choices" -- "$cur"))
            ;;
        completion)
            replies=($(compgen -W "bash zsh fish" -- "$cur"))
            ;;
        dev)
            replies=($(compgen -W "cloud-emulators scripted-model" -- "$cur"))
            ;;
        *)
            return 0  # the command's own arguments: files (complete -o default)
            ;;
    esac
    # an option (memory=rag) ends the word; a group (memory=) or a node (reader.) goes on
    if (( ${#replies[@]} == 1 )) && [[ "${replies[0]}" != *[=./] ]]; then
        compopt +o nospace 2>/dev/null
    fi
    # bash replaces only the text after the last word-break character ('=' and ':' by default)
    local tail="$cur"
    [[ "$COMP_WORDBREAKS" == *"="* ]] && tail="${tail##*=}"
    [[ "$COMP_WORDBREAKS" == *":"* ]] && tail="${tail##*:}"
    local prefix="${cur%"$tail"}"
    COMPREPLY=("${replies[@]#"$prefix"}")
    return 0
}
complete -o nospace -o default -F _memorybench_completion memorybench
"""

_ZSH = (
    "# memorybench completion (zsh), through zsh's bash completion layer.\n"
    "# Load it: source <(memorybench completion zsh)\n"
    "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n"
)

_FISH = r"""# memorybench completion (fish): commands; for qa and plan, Hydra's config groups, options and keys.
# Load it: memorybench completion fish | source
function __memorybench_complete
    set -l line (commandline -cp)
    set -l tokens (commandline -opc)
    if test (count $tokens) -le 1
        printf '%s\n' __COMMANDS__
        return
    end
    switch $tokens[2]
        case qa plan
            env COMP_LINE="$line" COMP_POINT=(string length -- "$line") $tokens[1] qa -sc query=bash 2>/dev/null | string split ' '
        case completion
            printf '%s\n' bash zsh fish
        case dev
            printf '%s\n' cloud-emulators scripted-model
    end
end
complete -c memorybench -a '(__memorybench_complete)'
"""


def completion_script(shell: str, commands: Sequence[str]) -> str:
    """The script `memorybench completion SHELL` prints, completing `commands` (the CLI's, which
    it passes in: this module sits below the CLI and never imports it)."""
    if shell not in SHELLS:
        raise UserError(f"no completion for shell {shell!r}; choose one of: {', '.join(SHELLS)}")
    names = " ".join(sorted(commands))
    if shell == "fish":
        return _FISH.replace("__COMMANDS__", names)
    bash = _BASH.replace("__COMMANDS__", names)
    return _ZSH + bash if shell == "zsh" else bash


def hydra_line(comp_line: str, comp_point: int | None = None) -> str:
    """The line as Hydra's completion of one app reads it: `memorybench OVERRIDES`, cut at the cursor.

    `memorybench qa -m memory=` -> `memorybench -m memory=`; `memorybench plan ` -> `memorybench `.
    """
    line = comp_line if comp_point is None else comp_line[:comp_point]
    match = _AFTER_COMMAND.match(line) or _AFTER_APP.match(line)
    return f"memorybench {match.group(1) if match else ''}"


def shell_completion(args: Sequence[str], commands: Sequence[str]) -> int:
    """`memorybench qa -sc install=SHELL | uninstall=SHELL | query=SHELL` (and `plan -sc ...`)."""
    words = [a for a in args if a not in FLAGS]
    action = next((w for w in words if w.split("=", 1)[0] in ("install", "uninstall", "query")), None)
    if action is None:
        raise UserError(
            "--shell-completion needs install=bash|zsh|fish (or query=SHELL); "
            "to load completion run `source <(memorybench completion bash)`"
        )
    what, _, shell = action.partition("=")
    if shell not in SHELLS:
        raise UserError(f"{action}: no completion for shell {shell!r}; choose one of: {', '.join(SHELLS)}")
    if what == "install":
        print(completion_script(shell, commands), end="")
        return 0
    if what == "uninstall":
        print("complete -e -c memorybench" if shell == "fish" else "complete -r memorybench")
        return 0
    point = os.environ.get("COMP_POINT", "")
    os.environ["COMP_LINE"] = hydra_line(os.environ.get("COMP_LINE", "memorybench "), int(point) if point.isdigit() else None)
    os.environ.pop("COMP_POINT", None)
    import contextlib
    import io

    from memorybench.hydra_app import qa_job

    sys.argv = ["memorybench", "-sc", "query=bash"]  # every script of ours reads the bash answer: words, one space apart
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        qa_job()
    # the schema nodes of the ConfigStore are no options a user picks (as in `qa --help`)
    print(" ".join(w for w in out.getvalue().split() if not w.rpartition("=")[2].endswith(SCHEMA_SUFFIX)))
    return 0


def completion_main(argv: Sequence[str], commands: Sequence[str]) -> int:
    parser = OneLineParser(
        prog="memorybench completion",
        description="Print a shell completion script: commands, and for qa/plan the config groups, options and keys "
        "(Hydra's completion of the qa app).",
        epilog="bash: source <(memorybench completion bash); zsh: source <(memorybench completion zsh); "
        "fish: memorybench completion fish | source",
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    ns = parser.parse_args(list(argv))
    print(completion_script(ns.shell, commands), end="")
    return 0
