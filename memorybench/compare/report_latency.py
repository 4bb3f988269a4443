"""The report's `latency_tokens` table: retrieval measured as the papers measure it.

Mem0's paper (Table 2) puts beside each method's accuracy its search latency (p50, p95),
its total latency (search + the answer, p50, p95) and the memory tokens handed to the
reader per query; the build's time and tokens per conversation complete the picture.
Everything here is read from the packs' own rows (through `PackReader`):

* search seconds and memory tokens per question: `memory/<method>/retrievals.jsonl`
  (`memory_retrieval.v2`'s `latency_s`, the wall-clock time from the question to the text
  the reader gets, the reader's call excluded; a v1 row has tokens but no time). A method
  whose memory does not depend on the question makes no search: its search columns are
  empty, its total is the answer alone, and its memory tokens are the conversation's
  (`memory/manifest.jsonl` metadata `memory_tokens`);
* the answer's seconds: the examples frame's `latency_s` (the reader's call, or an agent's
  wall time), over calls not served from the response cache, as `cost_latency`;
* per conversation: `memory/build_cost.jsonl` (the build's wall-clock seconds, the writer's
  prompt + completion tokens, the embedder's tokens);
* the retrieval budget (`memorybench.pack.budget`: `memory/budget.json`, else computed from
  the pack's rows): `budget.top_k`, the most items the system returned for one question, and
  whether the budget held in every pack of the condition (`BUDGET_TABLE_COLUMNS`, before
  the measured columns); `budget_notes` names each run whose budget did not hold, and how.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from memorybench.compare.report_tables import _j_columns, _overall_columns, _percentile, judges_of
from memorybench.pack import layout
from memorybench.pack.reader import PackReader

__all__ = ["BUDGET_TABLE_COLUMNS", "LATENCY_COLUMNS", "budget_notes", "latency_tokens", "pack_latency"]

#: the budget's columns, after the condition's accuracy and before the measured columns
BUDGET_TABLE_COLUMNS = ("budget_top_k", "returned_max", "budget_held")

#: the table's measured columns, after the condition's size and accuracy columns
LATENCY_COLUMNS = (
    "search_p50_s",
    "search_p95_s",
    "total_p50_s",
    "total_p95_s",
    "memory_tokens_per_query",
    "conversations_built",
    "build_s_per_conversation",
    "build_tokens_per_conversation",
    "build_embedding_tokens_per_conversation",
)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def pack_latency(location: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One pack's (questions, builds): per answered question `question_id`, `search_s` (nan
    where no search was made or timed), `memory_tokens`, `searched` (the method searches per
    question); per built conversation `sample_id`, `build_s`, `build_tokens`, `build_embedding_tokens`."""
    pack = PackReader.open(location)
    manifest = list(pack.rows(layout.MEMORY_MANIFEST))
    searched = {str(row.get("method")) for row in manifest if row.get("question_dependent")}
    conversation_tokens = {
        row.get("sample_id"): _number((row.get("metadata") or {}).get("memory_tokens"))
        for row in manifest
        if not row.get("question_dependent")
    }
    found: dict[str, tuple[float, float]] = {}
    for method in sorted(searched):
        for row in pack.rows(f"{layout.MEMORY}/{method}/retrievals.jsonl"):
            # the first row of a question stands (as the audit walk reads them)
            found.setdefault(str(row.get("question_id")), (_number(row.get("latency_s")), _number(row.get("memory_tokens"))))
    questions = []
    for prediction in pack.rows(layout.PREDICTIONS):
        qid = str(prediction.get("question_id"))
        search, tokens = found.get(qid, (math.nan, math.nan))
        if not searched:
            tokens = conversation_tokens.get(prediction.get("sample_id"), math.nan)
        questions.append({"question_id": qid, "search_s": search, "memory_tokens": tokens, "searched": bool(searched)})
    builds: dict[str, dict[str, Any]] = {}
    for row in pack.rows(layout.BUILD_COST):
        writer, embedder = row.get("writer") or {}, row.get("embedder") or {}
        builds[str(row.get("sample_id"))] = {  # a conversation built twice (a rebuild): its last build stands
            "sample_id": str(row.get("sample_id")),
            "build_s": _number(row.get("latency_s")),
            "build_tokens": (_number(writer.get("prompt_tokens", 0)) + _number(writer.get("completion_tokens", 0))),
            "build_embedding_tokens": _number(embedder.get("tokens", 0)),
        }
    return (
        pd.DataFrame(questions, columns=["question_id", "search_s", "memory_tokens", "searched"]),
        pd.DataFrame(list(builds.values()), columns=["sample_id", "build_s", "build_tokens", "build_embedding_tokens"]),
    )


def _mean(values: pd.Series) -> float:
    values = values.dropna()
    return float(values.mean()) if len(values) else math.nan


def _budgets(frame: pd.DataFrame) -> dict[str, Any]:
    from memorybench.pack.budget import budget_summary

    return {pack: budget_summary(pack) for pack in frame["pack"].unique()}


def _budget_cells(budgets: list[Any]) -> dict[str, Any]:
    """A condition's budget: its top_k (the packs' values, `;`-joined where they differ), the most
    items returned, and held (False where any pack did not, True where every pack did)."""
    top_k = sorted({b.top_k for b in budgets if b.top_k is not None})
    returned = [b.returned_max for b in budgets if b.returned_max is not None]
    held = [b.held for b in budgets]
    return {
        "budget_top_k": (top_k[0] if len(top_k) == 1 else ";".join(map(str, top_k))) if top_k else None,
        "returned_max": max(returned) if returned else None,
        "budget_held": False if False in held else (True if held and all(h is True for h in held) else None),
    }


def budget_notes(frame: pd.DataFrame) -> list[str]:
    """One note per run whose retrieval budget did not hold: its condition, run and how."""
    from memorybench.pack.budget import budget_flag

    budgets = _budgets(frame)
    notes = []
    for condition, rows in frame.groupby("condition", sort=False):
        for pack, mine in rows.groupby("pack", sort=False):
            flag = budget_flag(budgets[pack])
            if flag:
                notes.append(f"The retrieval budget did not hold for {condition} (run {mine['run_id'].iloc[0]}): {flag}.")
    return notes


def latency_tokens(frame: pd.DataFrame) -> pd.DataFrame:
    """Per condition: accuracy beside the retrieval budget (top_k, the most items returned,
    whether it held), search p50/p95, total (search + answer) p50/p95 and memory tokens per
    query (Mem0's Table 2), and the build's seconds and tokens per conversation (mean over
    the conversations the condition's packs built)."""
    judges = judges_of(frame)
    measured = {pack: pack_latency(pack) for pack in frame["pack"].unique()}
    budgets = _budgets(frame)
    out = []
    for condition, rows in frame.groupby("condition", sort=False):
        parts, builds = [], []
        for pack, mine in rows.groupby("pack", sort=False):
            questions, built = measured[pack]
            parts.append(mine[["question_id", "latency_s", "cache_hit"]].merge(questions, on="question_id", how="left"))
            builds.append(built[built["sample_id"].isin(set(mine["sample_id"]))])
        joined = pd.concat(parts, ignore_index=True)
        build = pd.concat(builds, ignore_index=True)
        searched = joined["searched"].fillna(False).astype(bool)
        # a memory that needs no search adds nothing before the answer; an untimed search (a v1 row) is unknown
        before_answer = joined["search_s"].where(searched, 0.0)
        answered = ~joined["cache_hit"].fillna(False).astype(bool)
        total = (before_answer + joined["latency_s"].astype(float))[answered]
        search = joined["search_s"][searched]
        out.append(
            {
                "condition": condition,
                "runs": rows["pack"].nunique(),
                "questions": rows["question_id"].nunique(),
                "rows": len(rows),
                **_overall_columns(rows),
                **_j_columns(rows, judges),
                **_budget_cells([budgets[pack] for pack in rows["pack"].unique()]),
                "search_p50_s": _percentile(search, 0.5),
                "search_p95_s": _percentile(search, 0.95),
                "total_p50_s": _percentile(total, 0.5),
                "total_p95_s": _percentile(total, 0.95),
                "memory_tokens_per_query": _mean(joined["memory_tokens"]),
                "conversations_built": len(build),
                "build_s_per_conversation": _mean(build["build_s"]),
                "build_tokens_per_conversation": _mean(build["build_tokens"]),
                "build_embedding_tokens_per_conversation": _mean(build["build_embedding_tokens"]),
            }
        )
    return pd.DataFrame(out)
