"""After the run: what the agent read against the gold evidence, and whether the run is comparable.

Computed from the stored trajectory (never from anything the agent could see, never
shown to it) once answering is over:

- `memory_recall`: the share of a question's evidence dia_ids that appeared in what the
  agent's steps printed; `hop_to_evidence`: the first step (1-based) that printed one.
  Null where the question has no evidence ids, and in prompt_injected mode (the memory is
  in the task, not in files the agent reads).
- `agent_comparison.v1`: comparable with reader runs or not, and why. Comparable needs all of:
  a budget enforced by the gateway on every question (`agent_trace.v3` `gateway.budget`),
  every request accounted for (each process's request sums equal the CLI's own
  `turn.completed` usage, no request outside a question), the budget matched to the
  reader's (`answerer.budget.match_reader`), no web search or MCP call, no timeout or
  failure, no workspace finding (`agent_trace.v2` `workspace_findings`). Each unmet one is
  a reason. Requests and tokens per question (p50, p95, max) and budget hits are counted
  from the gateway's rows.

Writes `agent/recall.jsonl`, `agent/comparison.json` and `agent/COMPARISON.md`, each
rewritten whole, so running it twice gives the same files.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from memorybench.answer.agent._records import (
    AgentComparison,
    AgentRecall,
    AgentStep,
    AgentTrace,
    AgentTraceV1,
    AgentTraceV3,
)
from memorybench.data.records import Question
from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.pack.run_pack import RunPack
from memorybench.pack.walk import evidence_ids
from memorybench.stats import spread

NO_BUDGET = (
    "no token budget enforced: no answerer.budget limit was set, so an agent may spend many times a "
    "reader's tokens on one question (set answerer.budget.match_reader=true)"
)
NO_GATEWAY = (
    "no token budget enforced: these traces were written without the memorybench gateway (before agent_trace.v3), "
    "so no request was counted or limited"
)
NOT_READER = (
    "the budget is not the reader's: set answerer.budget.match_reader=true so that each question gets the "
    "reader's prompt tokens plus its max_tokens"
)


def _gateway_reasons(traces: list[AgentTraceV1], every_trace: list[AgentTraceV1]) -> tuple[list[str], bool | None]:
    """Why the budget or the accounting does not make the run comparable; and whether every request was accounted."""
    gated = [t for t in traces if isinstance(t, AgentTraceV3) and t.gateway is not None]
    if len(gated) < len(traces):
        return [NO_GATEWAY], None
    reasons = []
    unbudgeted = [t for t in gated if t.gateway.budget is None or not t.gateway.budget.limits()]  # type: ignore[union-attr]
    if unbudgeted:
        reasons.append(NO_BUDGET if len(unbudgeted) == len(gated) else f"{len(unbudgeted)} question(s) had no budget")
    elif any(t.gateway.budget.source != "reader" for t in gated):  # type: ignore[union-attr]
        reasons.append(NOT_READER)
    processes = [t.gateway for t in every_trace if isinstance(t, AgentTraceV3) and t.gateway is not None]
    mismatched = [g for g in processes if g.usage_matches_cli is False]
    unattributed = sum(g.unattributed for g in processes)
    if mismatched:
        reasons.append(
            f"not every request accounted for: in {len(mismatched)} process(es) the gateway's request sums "
            f"differ from Codex's turn.completed usage ({mismatched[0].mismatch})"
        )
    if unattributed:
        reasons.append(f"not every request accounted for: {unattributed} model request(s) arrived outside any question")
    not_forwarded = [r for g in processes for r in g.not_forwarded]
    if not_forwarded:
        reasons.append(
            f"{len(not_forwarded)} request(s) to an endpoint no budget counts (first: {not_forwarded[0]}) were "
            "refused by the gateway, not forwarded: the agent tried to reach the model around the budget"
        )
    in_flight = sum(g.in_flight for g in processes)
    if in_flight:
        reasons.append(
            f"not every request accounted for: {in_flight} request(s) still unanswered when their process "
            "ended (killed at the timeout), so their usage is unknown"
        )
    return reasons, not mismatched and not unattributed and not in_flight


def finalize_agent_pack(pack_root: Path, questions: Sequence[Question]) -> AgentComparison | None:
    """Write recall and the comparison status for an agent pack; None when the pack has no agent traces."""
    pack = RunPack(Path(pack_root))
    stored = PackReader.open(pack_root)
    # each row by the schema it names: a resumed pack may hold agent_trace.v1 rows of an earlier version
    every_trace = [r for r in stored.records(layout.AGENT_TRACES) if isinstance(r, AgentTraceV1)]
    traces = [r for r in every_trace if r.phase == "answer" and r.question_id is not None]
    if not traces:
        return None
    by_question = {r.question_id: r for r in traces}
    steps: dict[str, list[AgentStep]] = defaultdict(list)
    for step in stored.records(layout.AGENT_TRAJECTORY, AgentStep):
        if step.question_id is not None:
            steps[step.question_id].append(step)
    first = traces[0]
    files_mode = first.mode != "prompt_injected"

    recalls: list[AgentRecall] = []
    for q in questions:
        if q.question_id not in by_question:
            continue
        evidence = list(evidence_ids(q.evidence))
        rows = sorted(steps.get(q.question_id, []), key=lambda r: r.step)
        seen: set[str] = set()
        hop = None
        for row in rows:
            hit = set(row.dia_ids) & set(evidence)
            if hit and hop is None:
                hop = row.step
            seen |= set(row.dia_ids)
        found = [e for e in evidence if e in seen]
        recall = round(len(found) / len(evidence), 6) if evidence and files_mode else None
        recalls.append(
            AgentRecall(
                question_id=q.question_id,
                sample_id=q.sample_id,
                evidence=evidence,
                found=found,
                memory_recall=recall,
                hop_to_evidence=hop if files_mode else None,
                steps=len(rows),
            )
        )
    pack.write_text(layout.AGENT_RECALL, "".join(json.dumps(r.row(), ensure_ascii=False) + "\n" for r in recalls))

    statuses = [r.status for r in traces]
    web = {qid for qid, rows in steps.items() if qid in by_question and any(r.kind == "web_search" for r in rows)}
    mcp = {qid for qid, rows in steps.items() if qid in by_question and any(r.kind == "mcp" for r in rows)}
    usage: dict[str, int] = defaultdict(int)
    for trace in every_trace:  # ingest passes cost tokens too
        for k, v in trace.usage.items():
            usage[k] += int(v)
    gateway_reasons, accounted = _gateway_reasons(traces, every_trace)
    reasons = list(gateway_reasons)
    if web:
        reasons.append(f"web search used in {len(web)} question(s)")
    if mcp:
        reasons.append(f"MCP tool calls in {len(mcp)} question(s)")
    if statuses.count("timeout"):
        reasons.append(
            f"{statuses.count('timeout')} question(s) hit the outer timeout ({first.timeout_s} s) and count as empty answers"
        )
    if statuses.count("failed"):
        reasons.append(f"{statuses.count('failed')} question(s) failed and count as empty answers")
    flagged = [t for t in every_trace if isinstance(t, AgentTrace) and t.workspace_findings]
    if flagged:
        reasons.append(
            f"workspace findings in {len(flagged)} process(es), ingest passes included (links, special files, "
            f"hard links from outside, oversized notes; none followed or read): see workspace_findings in "
            f"{layout.AGENT_TRACES}"
        )
    notes = []
    unchecked = [t for t in every_trace if not isinstance(t, AgentTrace)]
    if unchecked:
        notes.append(f"{len(unchecked)} trace(s) are agent_trace.v1, written before workspaces were checked for links")
    if first.mode != "prompt_injected":
        notes.append(
            f"mode {first.mode}: the agent reads files it chooses; the configured memory method's text was not shown to it"
        )
    if first.persist:
        notes.append("persist on: notes carry over between the questions of a conversation, so answers depend on question order")
    gated = [t.gateway for t in traces if isinstance(t, AgentTraceV3) and t.gateway is not None]
    budget_hits = sum(1 for t in traces if t.status == "budget_exceeded")
    first_budget = next((g.budget for g in gated if g.budget is not None), None)
    budget = None
    if first_budget is not None:
        budget = {
            k: v
            for k, v in first_budget.model_dump().items()
            if v is not None and k not in ("reader_prompt_tokens", "max_total_tokens" if first_budget.source == "reader" else "")
        }
        if first_budget.source == "reader":
            totals = [g.budget.max_total_tokens for g in gated if g.budget is not None and g.budget.max_total_tokens]
            budget["max_total_tokens_per_question"] = spread([float(v) for v in totals])
    measured = [r.memory_recall for r in recalls if r.memory_recall is not None]
    hops = [r.hop_to_evidence for r in recalls if r.hop_to_evidence is not None]
    comparison = AgentComparison(
        comparable=not reasons,
        reasons=reasons,
        mode=first.mode,
        persist=bool(first.persist),
        model=first.model,
        codex_version=first.codex_version,
        questions=len(traces),
        completed=statuses.count("completed"),
        timeouts=statuses.count("timeout"),
        failures=statuses.count("failed"),
        no_answer=statuses.count("no_answer"),
        questions_with_web_search=len(web),
        questions_with_mcp_calls=len(mcp),
        token_budget=None,
        usage_total=dict(sorted(usage.items())),
        requests_per_question=spread([float(g.requests) for g in gated]) if gated else None,
        tokens_per_question=spread([float(g.usage.get("input_tokens", 0) + g.usage.get("output_tokens", 0)) for g in gated])
        if gated
        else None,
        budget_exceeded=budget_hits,
        budget=budget,
        requests_accounted=accounted,
        memory_recall_mean=round(statistics.fmean(measured), 6) if measured else None,
        recall_questions=len(measured),
        hop_to_evidence_median=float(statistics.median(hops)) if hops else None,
        notes=notes,
    )
    pack.write_json(layout.AGENT_COMPARISON, comparison)
    pack.write_text(f"{layout.AGENT}/COMPARISON.md", _markdown(comparison))
    return comparison


def _markdown(c: AgentComparison) -> str:
    verdict = "comparable with reader runs" if c.comparable else "NOT comparable with reader runs"
    lines = [
        f"# Agent run: {verdict}",
        "",
        f"Codex CLI {c.codex_version}, model `{c.model}`, mode `{c.mode}`, persist {'on' if c.persist else 'off'}.",
        "",
        "## Why" if c.reasons else "## Checks",
        "",
        *(
            f"- {r}"
            for r in c.reasons
            or [
                "the reader's token budget enforced by the gateway on every question, every "
                "request accounted for, no web search, no MCP calls, every question finished"
            ]
        ),
        "",
        "## Requests and budget (counted by the memorybench gateway: agent/requests.jsonl)",
        "",
        *_budget_lines(c),
        "",
        "## Counts",
        "",
        "| questions | completed | timeouts | failed | no answer | with web search | with MCP calls |",
        "|---|---|---|---|---|---|---|",
        f"| {c.questions} | {c.completed} | {c.timeouts} | {c.failures} | {c.no_answer} | "
        f"{c.questions_with_web_search} | {c.questions_with_mcp_calls} |",
        "",
        f"Tokens (all processes, ingest included): {', '.join(f'{k} {v}' for k, v in c.usage_total.items()) or 'none reported'}.",
        "",
        "## What the agent read (computed after the run from agent/trajectory.jsonl; never shown to the agent)",
        "",
        f"- memory_recall (share of a question's evidence dia_ids its commands printed): "
        f"{'n/a' if c.memory_recall_mean is None else f'{c.memory_recall_mean:.3f}'} over {c.recall_questions} question(s)",
        f"- hop_to_evidence (first step that printed one), median: "
        f"{'n/a' if c.hop_to_evidence_median is None else c.hop_to_evidence_median}",
        "- per question: agent/recall.jsonl",
        "",
        *(f"Note: {n}." for n in c.notes),
        "",
    ]
    return "\n".join(lines)


def _budget_lines(c: AgentComparison) -> list[str]:
    if c.requests_per_question is None or c.tokens_per_question is None:
        return ["No gateway accounting in this pack (written before agent_trace.v3)."]

    def fmt(v: float) -> str:
        return str(int(v)) if float(v).is_integer() else f"{v:.1f}"

    r, t = c.requests_per_question, c.tokens_per_question
    budget = ", ".join(f"{k} {v}" for k, v in (c.budget or {}).items() if not isinstance(v, dict)) or "none"
    per_q = (c.budget or {}).get("max_total_tokens_per_question")
    lines = [
        "| per question | p50 | p95 | max |",
        "|---|---|---|---|",
        f"| model requests | {fmt(r['p50'])} | {fmt(r['p95'])} | {fmt(r['max'])} |",
        f"| tokens (input + output) | {fmt(t['p50'])} | {fmt(t['p95'])} | {fmt(t['max'])} |",
    ]
    if per_q:
        lines.append(f"| token budget (the reader's) | {fmt(per_q['p50'])} | {fmt(per_q['p95'])} | {fmt(per_q['max'])} |")
    lines += [
        "",
        f"Budget: {budget}. Questions that hit it (budget_exceeded, scored with their partial answer): {c.budget_exceeded}. "
        f"Every request accounted for: {'yes' if c.requests_accounted else 'no' if c.requests_accounted is False else 'n/a'}.",
    ]
    return lines
