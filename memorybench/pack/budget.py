"""One retrieval budget for every system: what a run's memory handed the reader, against it.

A run's budget is its config's `budget` node: `top_k` (the most retrieved items the reader
gets, best first; each method is asked for that many) and `max_memory_tokens` (the most
cl100k_base tokens of memory). `memorybench.memory._managed.ManagedMethod` applies both to
every method alike, clone or wrapped library, and journals per question what the system
returned (`memory/<method>/retrievals.jsonl`, `memory_retrieval.v3`: `returned`, `top_k`,
`memory_items`, beside the hits kept, the memory tokens and the search's seconds).

`BudgetSummary` (`memory_budget.v1`) is one pack's account, computed from its own rows
(config, retrievals, memory manifest, predictions) by `summarize_budget`: context tokens per
question (mean, p50, p95), retrieval latency (p50, p95), the most items returned, and the
questions where the system

* returned more than `top_k` (`over_top_k`: a per-speaker method asked `top_k` per speaker
  returns up to twice that; the reader got the first `top_k`, but the system did not keep
  to the budget),
* handed over its whole memory (`whole_memory`: every item of a memory of more than
  `WHOLE_MEMORY_MIN_ITEMS`; a `top_k` above the memory's size makes retrieval a bypass,
  as a top-k of 50 over fewer sessions did for a "100% LoCoMo"),
* handed the reader more than `max_memory_tokens` (`over_token_cap`),

and `held` with a one-line `why`. A question-independent memory (full_context, summaries,
a graph's text) makes no retrieval: `top_k` does not apply, and the summary says so.

qa writes it as `memory/budget.json` when a budget is set; `verify` recomputes it and
flags a mismatch; `budget_summary(pack)` gives it for any pack, an old one included
(computed on demand: a `memory_retrieval.v2` row returned its hits kept plus those the
token cap dropped, and its memory's items are the manifest's `item_count`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

from memorybench.pack import layout
from memorybench.records import Record
from memorybench.stats import mean, percentile

__all__ = [
    "WHOLE_MEMORY_MIN_ITEMS",
    "BudgetSummary",
    "budget_flag",
    "budget_summary",
    "compute_budget",
    "summarize_budget",
]

#: a retrieval that returned every item of a memory larger than this handed over the whole
#: memory (a smaller one is handed over whole by any top_k: nothing to flag)
WHOLE_MEMORY_MIN_ITEMS = 5


class BudgetSummary(Record, schema="memory_budget.v1"):
    """`memory/budget.json`: the retrieval budget one run held, from its own rows."""

    #: the memory method (`memory.name`); null where no method ran (imported answers)
    method: Optional[str] = None
    #: `budget.top_k` (null: each method's own `memory.top_k`, no item budget)
    top_k: Optional[int] = None
    #: `budget.max_memory_tokens` (null: no token cap)
    max_memory_tokens: Optional[int] = None
    #: whether the memory is retrieved per question (false: question-independent, no retrieval)
    retrieved: bool
    #: answered questions (predictions.jsonl)
    questions: int
    #: of them, questions with a retrieval row (the first row of a question stands)
    retrievals: int
    #: cl100k_base tokens of the memory handed to the reader per question (a question-
    #: independent memory: its conversation's text); null where no question has a count
    context_tokens_mean: Optional[float] = None
    context_tokens_p50: Optional[float] = None
    context_tokens_p95: Optional[float] = None
    #: seconds from the question to the memory text (`memory_retrieval.v2+` `latency_s`)
    retrieval_latency_p50_s: Optional[float] = None
    retrieval_latency_p95_s: Optional[float] = None
    #: the most items the system returned for one question, before the wrapper's budget
    returned_max: Optional[int] = None
    #: questions whose system returned more than `top_k` items
    over_top_k: int = 0
    #: questions whose system returned every item of its memory (more than WHOLE_MEMORY_MIN_ITEMS)
    whole_memory: int = 0
    #: questions whose memory handed to the reader had more than `max_memory_tokens` tokens
    over_token_cap: int = 0
    #: true: a budget was set and the system kept to it on every question; false: it returned
    #: more than top_k, handed over its whole memory or passed the token cap on some question;
    #: null: nothing to hold (no budget set and no bypass, or no retrieval)
    held: Optional[bool] = None
    #: one line: how the budget held, or how it did not
    why: str


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _node(config: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    node = config.get(key) if isinstance(config, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def returned_of(row: Mapping[str, Any]) -> int:
    """The items the system returned for one question: a v3 row's `returned`, else (v1, v2,
    written before the wrapper cut to `top_k`) its hits kept plus those the token cap dropped."""
    returned = _int(row.get("returned"))
    if returned is not None:
        return returned
    return len(row.get("hits") or ()) + (_int(row.get("dropped_by_budget")) or 0)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def summarize_budget(
    config: Mapping[str, Any],
    manifest: Iterable[Mapping[str, Any]],
    retrievals: Iterable[Mapping[str, Any]],
    predictions: Iterable[Mapping[str, Any]],
) -> BudgetSummary:
    """The budget summary of one run from its rows: `config` (config.resolved.yaml as plain
    data), the memory manifest's rows, the retrieval rows of its methods (journal order) and
    the predictions' rows (the answered questions)."""
    budget, memory = _node(config, "budget"), _node(config, "memory")
    top_k, max_tokens = _int(budget.get("top_k")), _int(budget.get("max_memory_tokens"))
    manifest = list(manifest)
    answered = [(str(p.get("question_id")), str(p.get("sample_id"))) for p in predictions]
    method = memory.get("name") or next((str(m.get("method")) for m in manifest), None)
    searched = any(m.get("question_dependent") for m in manifest)
    items = {str(m.get("sample_id")): _int(m.get("item_count")) for m in manifest}
    base = {"method": method, "top_k": top_k, "max_memory_tokens": max_tokens, "questions": len(answered)}
    if not manifest:
        why = "no memory method built a memory in this pack (imported answers, or an agent reading the sessions itself)"
        return BudgetSummary(**base, retrieved=False, retrievals=0, why=f"{why}: no retrieval budget to check")
    if not searched:
        per_sample = {str(m.get("sample_id")): _number((m.get("metadata") or {}).get("memory_tokens")) for m in manifest}
        tokens = [t for _, sid in answered if (t := per_sample.get(sid)) is not None]
        over = sum(1 for _, sid in answered if max_tokens is not None and (per_sample.get(sid) or 0) > max_tokens)
        cap = f"budget.max_memory_tokens capped its text at {max_tokens} tokens" if max_tokens else "no token cap was set"
        why = f"question-independent memory (built once per conversation, no retrieval per question): budget.top_k does not apply; {cap}"
        if over:
            why = (
                f"handed the reader more than budget.max_memory_tokens={max_tokens} tokens on {over} of {len(answered)} questions"
            )
        return BudgetSummary(
            **base,
            retrieved=False,
            retrievals=0,
            **_spread("context_tokens", tokens),
            over_token_cap=over,
            held=False if over else None,
            why=why,
        )
    first: dict[str, Mapping[str, Any]] = {}
    for row in retrievals:
        first.setdefault(str(row.get("question_id")), row)
    rows = [(first[qid], sid) for qid, sid in answered if qid in first]
    if not rows:
        why = "the method makes its memory per question without journaling its hits: what it returned is unknown"
        return BudgetSummary(**base, retrieved=True, retrievals=0, why=why)
    returned = [returned_of(row) for row, _ in rows]
    tokens = [t for row, _ in rows if (t := _number(row.get("memory_tokens"))) is not None]
    latency = [t for row, _ in rows if (t := _number(row.get("latency_s"))) is not None]
    whole = 0
    for (row, sid), n in zip(rows, returned):
        size = _int(row.get("memory_items"))
        size = items.get(sid) if size is None else size
        whole += size is not None and size > WHOLE_MEMORY_MIN_ITEMS and n >= size
    over_k = sum(1 for n in returned if top_k is not None and n > top_k)
    over_cap = sum(1 for t in tokens if max_tokens is not None and t > max_tokens)
    most = max(returned)
    of = f"of {len(rows)} questions"
    problems = []
    if over_k:
        problems.append(
            f"returned up to {most} items per question where budget.top_k is {top_k} ({over_k} {of} over; "
            f"the reader got the first {top_k})"
        )
    if whole:
        problems.append(f"handed over the whole memory on {whole} {of} (every item, a retrieval bypass)")
    if over_cap:
        problems.append(f"handed the reader more than budget.max_memory_tokens={max_tokens} tokens on {over_cap} {of}")
    spread = _spread("context_tokens", tokens)
    if problems:
        held, why = False, "; ".join(problems)
    elif top_k is None and max_tokens is None:
        held, why = None, f"no retrieval budget set (each method's own memory.top_k): up to {most} items returned per question"
    else:
        said = [f"at most {most} items returned per question (budget.top_k {top_k})"] if top_k is not None else []
        if max_tokens is not None:
            said.append(f"at most {_fmt(max(tokens) if tokens else None)} context tokens (budget.max_memory_tokens {max_tokens})")
        held, why = True, "held: " + ", ".join(said)
    return BudgetSummary(
        **base,
        retrieved=True,
        retrievals=len(rows),
        **spread,
        retrieval_latency_p50_s=percentile(latency, 0.5),
        retrieval_latency_p95_s=percentile(latency, 0.95),
        returned_max=most,
        over_top_k=over_k,
        whole_memory=whole,
        over_token_cap=over_cap,
        held=held,
        why=why,
    )


def _spread(name: str, values: list[float]) -> dict[str, float | None]:
    return {f"{name}_mean": mean(values), f"{name}_p50": percentile(values, 0.5), f"{name}_p95": percentile(values, 0.95)}


def compute_budget(pack: Any, config: Mapping[str, Any] | None = None) -> BudgetSummary:
    """The budget summary recomputed from a pack's rows (`pack`: a `PackReader`; `config`: its
    config.resolved.yaml as plain data, read from the pack unless given)."""
    if config is None:
        import yaml

        config = (yaml.safe_load(pack.read_text(layout.CONFIG)) or {}) if pack.exists(layout.CONFIG) else {}
    manifest = list(pack.rows(layout.MEMORY_MANIFEST))
    methods = sorted({str(m.get("method")) for m in manifest if m.get("question_dependent")})
    retrievals = [row for method in methods for row in pack.rows(layout.retrievals(method))]
    return summarize_budget(config, manifest, retrievals, pack.rows(layout.PREDICTIONS))


def budget_summary(location: Any) -> BudgetSummary:
    """A pack's budget summary: its own `memory/budget.json` where it has one (verify checks it
    against its rows), else computed from its rows now (a pack without a budget, an old pack)."""
    from memorybench.pack.reader import PackReader

    pack = PackReader.open(location)
    if pack.exists(layout.MEMORY_BUDGET):
        return pack.record(layout.MEMORY_BUDGET, BudgetSummary)
    return compute_budget(pack)


def budget_flag(summary: BudgetSummary) -> str | None:
    """The one line a table and `compare` show for a run whose budget did not hold (None: it held,
    or there was nothing to hold)."""
    return summary.why if summary.held is False else None
