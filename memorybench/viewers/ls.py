"""`memorybench ls [PACKS...]`: the runs in a terminal table, newest last.

Each argument is a pack, an experiment folder, a packs root or `latest` (default: the packs
root `outputs/packs`). One row per pack: run id, experiment, memory, reader, questions
answered of those asked, LoCoMo F1 over categories 1-4 and over 1-5 (both as metrics.json
holds them: `-` where a run asked none of those categories), J per finished judge, cost,
status. The newest row is what `latest` names in every command that takes a pack.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memorybench.errors import OneLineParser, UserError, printable
from memorybench.pack import layout
from memorybench.pack.find import DEFAULT_PACKS, LATEST, newest, packs_under, resolve_pack, started_at
from memorybench.pack.reader import PackReader
from memorybench.score.scorers import LEXICAL

COLUMNS = ("run_id", "experiment", "memory", "reader", "questions", "F1 1-4", "F1 1-5", "J", "cost", "status")


def _score(value: Any) -> str:
    return "-" if value is None else f"{float(value):.4f}"


def _cost(usage: dict[str, Any], local: bool | None) -> str:
    total = usage.get("total") or {}
    if local:
        return "local"
    if total.get("cost_usd") is None:
        return "unknown" if total else "-"
    return f"${float(total['cost_usd']):.4f}"


def pack_row(folder: Path) -> dict[str, str]:
    """One pack's row (every cell a string); a pack whose files do not read says so in status."""
    pack = PackReader.open(folder)
    row = dict.fromkeys(COLUMNS, "-")
    row["run_id"] = folder.name
    try:
        meta = pack.meta()
    except Exception:  # noqa: BLE001  (a pack being written, or broken: listed, not fatal)
        row["status"] = "unreadable run_meta.json (memorybench verify)"
        return row
    choices = meta.choices or {}
    reader = next((m for m in meta.models if m.role == "reader"), None)
    if choices.get("answerer") not in (None, "reader"):  # an agent answers: it is the "reader"
        reader_name = str(choices["answerer"])
    else:
        reader_name = f"{choices.get('reader', '-')}" + (
            f" ({reader.requested})" if reader is not None and reader.requested else ""
        )
    row.update(
        run_id=str(meta.run_id or folder.name),
        experiment=str(meta.name),
        memory=str(choices.get("memory", "-")),
        reader=reader_name,
    )
    answered = sum(1 for _ in pack.rows(layout.PREDICTIONS))
    total = meta.question_count or meta.questions_total
    row["questions"] = f"{answered}/{total}" if total is not None else str(answered)
    if pack.exists(layout.METRICS):
        metrics = pack.metrics()
        row["F1 1-4"] = _score(metrics.subset(LEXICAL, "1-4"))
        row["F1 1-5"] = _score(metrics.subset(LEXICAL, "1-5"))
        row["cost"] = _cost(metrics.usage, metrics.local_model)
    judges = []
    for judge in pack.judges():
        found = pack.autorater_metrics(judge)
        judges.append(f"{judge}={_score(found.j.overall if found is not None else None)}")
    row["J"] = " ".join(judges) or "-"
    row["status"] = "done" if pack.is_complete() else f"unfinished ({answered}/{total})"
    return row


def format_rows(rows: list[dict[str, str]]) -> str:
    # a pack's names (run id, experiment, model) reach the terminal with control characters neutralised
    rows = [{k: printable(v) for k, v in r.items()} for r in rows]
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in COLUMNS}
    lines = ["  ".join(c.ljust(widths[c]) for c in COLUMNS).rstrip()]
    lines += ["  ".join(r[c].ljust(widths[c]) for c in COLUMNS).rstrip() for r in rows]
    return "\n".join(lines)


def find_packs(arguments: Sequence[str]) -> list[Path]:
    """The packs the arguments name, each once, in the order they were made (newest last)."""
    found: dict[Path, None] = {}
    for argument in arguments or [str(DEFAULT_PACKS)]:
        packs = [Path(resolve_pack(argument))] if Path(argument).name == LATEST else packs_under(argument)
        if not packs:
            hint = (
                "run `memorybench qa ...` first, or pass a packs folder"
                if argument == str(DEFAULT_PACKS)
                else "pass a pack, an experiment folder <packs>/<name> or a packs root"
            )
            raise UserError(f"no pack under {argument}; {hint}")
        found.update(dict.fromkeys(packs))
    return sorted(found, key=lambda p: (started_at(p), str(p)))


def ls_main(argv: Sequence[str]) -> int:
    parser = OneLineParser(prog="memorybench ls", description="List runs: id, memory, reader, questions, F1, J, cost, status.")
    parser.add_argument(
        "packs", nargs="*", metavar="PACKS", help=f"packs, experiment folders, packs roots or `latest` (default: {DEFAULT_PACKS})"
    )
    ns = parser.parse_args(list(argv))
    packs = find_packs(ns.packs)
    print(format_rows([pack_row(p) for p in packs]))
    if len(packs) > 1:
        last = newest(packs)
        print(
            f"\nnewest: {printable(last.name)}; `latest` names it in any command that takes a pack "
            f"(e.g. memorybench show {last.parents[1]}/latest QUESTION_ID)"
        )
    return 0
