"""One table at the end of a sweep (`memorybench qa -m ...`): each run's overrides, run id,
questions, LoCoMo F1 over categories 1-4 and 1-5, cost and status, in the order the sweep
ran them.

A Hydra callback (conf/config.yaml `hydra.callbacks.sweep_table`): `on_job_end` keeps each
job's overrides and what it returned (the run's metrics.json, or the failure), and
`on_multirun_end` prints the table on stdout. Hydra's basic launcher calls `on_job_end` in
the driver; our Cloud Run launcher calls it for each job it collects
(`memorybench_cloudrun_launcher._core.job_returns`).
"""

from __future__ import annotations

from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from memorybench.errors import printable
from memorybench.score.scorers import LEXICAL

COLUMNS = ("overrides", "run_id", "questions", "F1 1-4", "F1 1-5", "cost", "status")


def _score(value: Any) -> str:
    return "-" if value is None else f"{float(value):.4f}"


def _cost(metrics: dict[str, Any]) -> str:
    if metrics.get("local_model"):
        return "local"
    total = (metrics.get("usage") or {}).get("total") or {}
    if not total:
        return "-"
    return "unknown" if total.get("cost_usd") is None else f"${float(total['cost_usd']):.4f}"


def job_row(job_return: JobReturn) -> dict[str, str]:
    """A job's row: its sweep overrides and its metrics (or why it has none)."""
    row = dict.fromkeys(COLUMNS, "-")
    row["overrides"] = " ".join(job_return.overrides or []) or "(no overrides)"
    status = getattr(job_return, "status", None)
    value = job_return._return_value if status == JobStatus.FAILED else job_return.return_value
    if status == JobStatus.FAILED or isinstance(value, BaseException):
        row["status"] = f"failed: {str(value).splitlines()[0][:120] if value is not None else 'no reason given'}"
        return row
    if not isinstance(value, dict):
        row["status"] = "done (no metrics returned)"
        return row
    row.update(run_id=str(value.get("run_id", "-")), questions=str(value.get("questions", "-")), cost=_cost(value), status="done")
    row["F1 1-4"], row["F1 1-5"] = _score(_subset(value, "1-4")), _score(_subset(value, "1-5"))
    return row


def _subset(metrics: dict[str, Any], name: str) -> Any:
    """The lexical score (`LEXICAL`, LoCoMo F1) over a named subset of a run's metrics.json:
    metrics.v2's `scores.<LEXICAL>.subsets`, or an older metrics.v1's `<LEXICAL>.overall_1_4` /
    `overall_1_5`."""
    scores = metrics.get("scores")
    if isinstance(scores, dict):
        return (((scores.get(LEXICAL) or {}).get("subsets") or {}).get(name) or {}).get("value")
    return (metrics.get(LEXICAL) or {}).get("overall_" + name.replace("-", "_"))


def format_table(rows: list[dict[str, str]]) -> str:
    rows = [{k: printable(v) for k, v in r.items()} for r in rows]
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in COLUMNS}
    lines = ["  ".join(c.ljust(widths[c]) for c in COLUMNS).rstrip()]
    lines += ["  ".join(r[c].ljust(widths[c]) for c in COLUMNS).rstrip() for r in rows]
    return "\n".join(lines)


class SweepTable(Callback):
    def __init__(self) -> None:
        self.rows: list[dict[str, str]] = []

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.rows = []

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        self.rows.append(job_row(job_return))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if not self.rows:
            return
        _keep_varying_overrides(self.rows)
        done = sum(r["status"] == "done" for r in self.rows)
        print(
            f"\nsweep: {done} of {len(self.rows)} runs done (memorybench ls {config.paths.packs}/{config.name} lists their packs)"
        )
        print(format_table(self.rows), flush=True)


def _keep_varying_overrides(rows: list[dict[str, str]]) -> None:
    """Each row's overrides less those every row shares (the sweep's fixed settings): what
    tells the runs apart."""
    split = [r["overrides"].split(" ") for r in rows]
    shared = set(split[0]).intersection(*split[1:]) if len(rows) > 1 else set()
    for row, words in zip(rows, split):
        row["overrides"] = " ".join(w for w in words if w not in shared) or "(the same overrides)"
