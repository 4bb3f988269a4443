"""`codex exec --json` output: the outcome of one process and its normalized trajectory.

Events (DESIGN.md 7): `thread.started`, `turn.started`, `item.started|updated|completed`
(agent_message, reasoning, command_execution, file_change, mcp_tool_call, web_search,
todo_list, error), `turn.completed` (usage), `turn.failed`, and a top-level `error`.
Items of type `error` are warnings, not failures. File reads are inferred from
`command_execution.command`; which turns the agent saw, from the dia_ids its commands printed.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DIA_ID = re.compile(r"\bD\d+:\d+\b")
SESSION_FILE = re.compile(r"^sessions/session_\d+\.md$")
SHELLS = {"bash", "sh", "zsh", "dash"}
READERS = {
    "cat",
    "head",
    "tail",
    "sed",
    "awk",
    "less",
    "more",
    "nl",
    "tac",
    "cut",
    "sort",
    "uniq",
    "wc",
    "jq",
    "strings",
    "od",
    "xxd",
    "diff",
}
SEARCHERS = {"grep", "egrep", "fgrep", "rg", "ag", "ack", "zgrep"}
LISTERS = {"ls", "find", "tree", "fd", "du", "stat", "file"}
WRITERS = {"tee", "touch", "mkdir", "cp", "mv", "rm", "truncate", "ln", "install"}
#: per program, the options whose value is the next word (so that word is not a path)
VALUED = {
    "head": {"-n", "-c"},
    "tail": {"-n", "-c"},
    "grep": {"-e", "-f", "-m", "-A", "-B", "-C", "--max-count", "--regexp", "--file", "-d", "-D"},
    "rg": {"-e", "-f", "-m", "-A", "-B", "-C", "-g", "--glob", "-t", "--type", "-T", "-M", "--max-count", "--regexp"},
    "sed": {"-e", "-f"},
    "awk": {"-F", "-v", "-f"},
    "cut": {"-d", "-f", "-c", "-b"},
    "sort": {"-k", "-t"},
    "find": {"-name", "-iname", "-maxdepth", "-mindepth", "-type", "-path", "-newer", "-size", "-regex"},
    "ls": {"-I", "--ignore"},
    "tree": {"-L", "-I", "-P"},
    "nl": {"-b", "-s", "-w"},
}
for _name in ("egrep", "fgrep", "zgrep"):
    VALUED[_name] = VALUED["grep"]
VALUED["ag"] = VALUED["ack"] = VALUED["rg"]
SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "|&", ";;"}


@dataclass
class Outcome:
    status: str
    answer: str
    error: str | None
    warnings: list[str]
    usage: dict[str, int]
    turns: int
    thread_id: str | None
    #: every item, last state seen, in first-seen order
    items: list[dict[str, Any]] = field(default_factory=list)


def parse_lines(lines: Iterable[str]) -> list[dict[str, Any]]:
    events = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
            events.append(value if isinstance(value, dict) else {"unparsed": line})
        except ValueError:
            events.append({"unparsed": line})
    return events


def outcome(events: list[dict[str, Any]], *, exit_code: int | None, timed_out: bool, stderr_tail: str) -> Outcome:
    items: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    usage: dict[str, int] = {}
    warnings: list[str] = []
    failure: str | None = None
    turns = 0
    thread_id = None
    for n, event in enumerate(events):
        kind = event.get("type")
        if kind == "thread.started":
            thread_id = event.get("thread_id")
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item") or {}
            key = str(item.get("id", f"#{n}"))
            if key not in items:
                order.append(key)
            items[key] = item
            if kind == "item.completed" and item.get("type") == "error":
                warnings.append(str(item.get("message", "")))
        elif kind == "turn.completed":
            turns += 1
            for k, v in (event.get("usage") or {}).items():
                if isinstance(v, (int, float)):
                    usage[k] = usage.get(k, 0) + int(v)
        elif kind == "turn.failed":
            failure = _message_of(str((event.get("error") or {}).get("message", "turn failed")))
        elif kind == "error":
            warnings.append(str(event.get("message", "")))
    ordered = [items[k] for k in order]
    messages = [i for i in ordered if i.get("type") == "agent_message" and i.get("text") is not None]
    answer = str(messages[-1]["text"]).strip() if messages else ""
    if timed_out:
        status, error = "timeout", "killed at the outer timeout"
    elif failure is not None:
        status, error = "failed", failure
    elif exit_code not in (0, None):
        last = stderr_tail.strip().splitlines()[-1] if stderr_tail.strip() else ""
        status, error = "failed", f"codex exited with {exit_code}" + (f": {last}" if last else "")
    elif turns == 0:
        status, error = "failed", "no turn.completed event"
    elif not answer:
        status, error = "no_answer", "the turn ended without an agent message"
    else:
        status, error = "completed", None
    return Outcome(
        status=status,
        answer=answer if status == "completed" else "",
        error=error,
        warnings=warnings,
        usage=usage,
        turns=turns,
        thread_id=thread_id,
        items=ordered,
    )


def _message_of(text: str) -> str:
    """The `error.message` of an OpenAI-style error body the CLI passed on verbatim, else the text."""
    try:
        body = json.loads(text)
        message = body.get("error", {}).get("message") if isinstance(body, dict) else None
    except (ValueError, AttributeError):
        message = None
    return str(message) if message else text


# -- commands ------------------------------------------------------------------------
def unwrap_shell(command: str) -> str:
    """`/bin/bash -lc 'X'` -> `X` (the CLI reports the wrapped form)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    if len(argv) >= 3 and os.path.basename(argv[0]) in SHELLS:
        flags = argv[1:-1]
        if flags and all(f.startswith("-") for f in flags) and any("c" in f for f in flags):
            return argv[-1]
    return command


def _tokens(script: str) -> list[str]:
    lexer = shlex.shlex(script.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return script.split()


def _simple_commands(tokens: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for token in tokens:
        if token in SEPARATORS:
            out.append([])
        else:
            out[-1].append(token)
    return [c for c in out if c]


@dataclass
class Access:
    kind: str
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)


def classify(command: str) -> Access:
    """What a shell command reads and writes (a static reading of its words; no execution)."""
    kinds: set[str] = set()
    reads: list[str] = []
    writes: list[str] = []
    for words in _simple_commands(_tokens(unwrap_shell(command))):
        rest: list[str] = []
        i = 0
        while i < len(words):
            w = words[i]
            if w and set(w) <= set("<>&|") and ">" in w:
                if rest and rest[-1].isdigit():  # `2>` : the digit is a file descriptor
                    rest.pop()
                if i + 1 < len(words) and not w.endswith("&"):
                    target = words[i + 1]
                    if target != "/dev/null":
                        writes.append(target)
                i += 2
                continue
            if w == "<":
                if i + 1 < len(words):
                    reads.append(words[i + 1])
                i += 2
                continue
            if w in ("<<", "<<-", "<<<"):  # a here-document's delimiter or a here-string
                i += 2
                continue
            rest.append(w)
            i += 1
        while rest and ("=" in rest[0] and not rest[0].startswith("-") and rest[0].split("=", 1)[0].isidentifier()):
            rest.pop(0)
        while rest and rest[0] in ("sudo", "env", "command", "nice", "time", "xargs"):
            rest.pop(0)
        if not rest:
            continue
        program = os.path.basename(rest[0])
        args = rest[1:]
        operands = _operands(args, VALUED.get(program, set()))
        if program in SEARCHERS:
            kinds.add("search")
            has_pattern_option = any(a in ("-e", "-f", "--regexp", "--file") or a.startswith("--regexp=") for a in args)
            paths = operands if has_pattern_option else operands[1:]
            reads.extend(paths or ["."])
        elif program in READERS:
            kinds.add("read")
            if program in ("sed", "awk") and not any(a in ("-e", "-f") for a in args):
                operands = operands[1:]
            reads.extend(operands)
        elif program in LISTERS:
            kinds.add("list")
            reads.extend(operands or ["."])
        elif program in WRITERS:
            kinds.add("write")
            if program in ("cp", "mv", "install", "ln"):
                reads.extend(operands[:-1])
                writes.extend(operands[-1:])
            else:
                writes.extend(operands)
        elif program in ("apply_patch", "applypatch"):
            kinds.add("write")
        else:
            kinds.add("command")
    if writes:
        kinds.add("write")
    for kind in ("write", "search", "read", "list"):
        if kind in kinds:
            return Access(kind, reads, writes)
    return Access("command", reads, writes)


def _operands(args: list[str], valued: set[str]) -> list[str]:
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "--":
            continue
        if a.startswith("-"):
            if a in valued:
                skip = True
            continue
        out.append(a)
    return out


# -- trajectory ----------------------------------------------------------------------
def normalize_path(path: str, workspace: Path) -> tuple[list[str], bool]:
    """Workspace-relative paths (globs expanded against the workspace) and whether one lies outside it."""
    full = os.path.normpath(path if os.path.isabs(path) else os.path.join(str(workspace), path))
    candidates = (sorted(glob.glob(full)) or [full]) if any(c in path for c in "*?[") else [full]
    out, outside = [], False
    root = os.path.normpath(str(workspace))
    for c in candidates:
        if c == root:
            out.append(".")
        elif c.startswith(root + os.sep):
            out.append(os.path.relpath(c, root))
        else:
            out.append(c)
            outside = True
    return out, outside


def steps_from_items(items: list[dict[str, Any]], workspace: Path, valid_dia_ids: Mapping[str, str]) -> list[dict[str, Any]]:
    """One dict per tool action (fields of `AgentStep` minus the row identity). `valid_dia_ids`
    maps each turn id the workspace shows to the turn's own id (`_workspace.shown_ids`)."""
    steps: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type")
        step: dict[str, Any] | None = None
        if kind == "command_execution":
            command = str(item.get("command", ""))
            access = classify(command)
            reads, writes, outside = [], [], False
            for p in access.reads:
                got, out = normalize_path(p, workspace)
                reads += got
                outside |= out
            for p in access.writes:
                got, out = normalize_path(p, workspace)
                writes += got
                outside |= out
            output = str(item.get("aggregated_output") or "")
            step = {
                "kind": access.kind,
                "command": command,
                "exit_code": item.get("exit_code"),
                "reads": _unique(reads),
                "writes": _unique(writes),
                "session_files": _unique(r for r in reads if SESSION_FILE.match(r)),
                "dia_ids": _unique(valid_dia_ids[d] for d in DIA_ID.findall(output) if d in valid_dia_ids),
                "outside_workspace": outside,
            }
        elif kind == "file_change":
            writes, outside = [], False
            for change in item.get("changes") or []:
                got, out = normalize_path(str(change.get("path", "")), workspace)
                writes += got
                outside |= out
            step = {"kind": "file_change", "writes": _unique(writes), "outside_workspace": outside}
        elif kind == "mcp_tool_call":
            step = {"kind": "mcp", "server": item.get("server"), "tool": item.get("tool")}
        elif kind == "web_search":
            step = {"kind": "web_search", "query": item.get("query")}
        if step is not None:
            step["item_id"] = item.get("id")
            step["status"] = item.get("status")
            steps.append(step)
    return steps


def _unique(values: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for v in values:
        seen.setdefault(v, None)
    return list(seen)
