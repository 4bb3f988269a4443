"""After the run: what the agent read against the gold evidence, and whether the run is comparable.

Computed from the stored trajectory (never from anything the agent could see, never
shown to it) once answering is over:

- `memory_recall`: the share of a question's evidence dia_ids that appeared in what the
  agent's steps printed; `hop_to_evidence`: the first step (1-based) that printed one.
  Null where the question has no evidence ids, and in prompt_injected mode (the memory is
  in the task, not in files the agent reads).
- `agent_comparison.v1`: comparable with reader runs or not, and why (a process whose
  workspace had findings, `agent_trace.v2` `workspace_findings`, is one reason).

Writes `agent/recall.jsonl`, `agent/comparison.json` and `agent/COMPARISON.md`, each
rewritten whole, so running it twice gives the same files.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from memorybench.answer.agent._events import DIA_ID
from memorybench.answer.agent._records import AgentComparison, AgentRecall, AgentStep, AgentTrace, AgentTraceV1
from memorybench.data.records import Question
from memorybench.pack import layout
from memorybench.pack.reader import PackReader
from memorybench.pack.run_pack import RunPack

NO_BUDGET = ("no token budget enforced: the pinned Codex CLI has no per-question token limit, so an agent may spend "
             "many times a reader's tokens on one question")


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
        evidence = list(dict.fromkeys(d for e in q.evidence for d in DIA_ID.findall(str(e))))
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
        recalls.append(AgentRecall(question_id=q.question_id, sample_id=q.sample_id, evidence=evidence, found=found,
                                   memory_recall=recall, hop_to_evidence=hop if files_mode else None, steps=len(rows)))
    pack.write_text(layout.AGENT_RECALL, "".join(json.dumps(r.row(), ensure_ascii=False) + "\n" for r in recalls))

    statuses = [r.status for r in traces]
    web = {qid for qid, rows in steps.items() if qid in by_question and any(r.kind == "web_search" for r in rows)}
    mcp = {qid for qid, rows in steps.items() if qid in by_question and any(r.kind == "mcp" for r in rows)}
    usage: dict[str, int] = defaultdict(int)
    for trace in every_trace:  # ingest passes cost tokens too
        for k, v in trace.usage.items():
            usage[k] += int(v)
    reasons = [NO_BUDGET]
    if web:
        reasons.append(f"web search used in {len(web)} question(s)")
    if mcp:
        reasons.append(f"MCP tool calls in {len(mcp)} question(s)")
    if statuses.count("timeout"):
        reasons.append(f"{statuses.count('timeout')} question(s) hit the outer timeout ({first.timeout_s} s) and count as empty answers")
    if statuses.count("failed"):
        reasons.append(f"{statuses.count('failed')} question(s) failed and count as empty answers")
    flagged = [t for t in every_trace if isinstance(t, AgentTrace) and t.workspace_findings]
    if flagged:
        reasons.append(f"workspace findings in {len(flagged)} process(es), ingest passes included (links, special files, "
                       f"hard links from outside, oversized notes; none followed or read): see workspace_findings in "
                       f"{layout.AGENT_TRACES}")
    notes = []
    unchecked = [t for t in every_trace if not isinstance(t, AgentTrace)]
    if unchecked:
        notes.append(f"{len(unchecked)} trace(s) are agent_trace.v1, written before workspaces were checked for links")
    if first.mode != "prompt_injected":
        notes.append(f"mode {first.mode}: the agent reads files it chooses; the configured memory method's text was not shown to it")
    if first.persist:
        notes.append("persist on: notes carry over between the questions of a conversation, so answers depend on question order")
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
        *(f"- {r}" for r in c.reasons or ["no web search, no MCP calls, a token budget enforced, every question finished"]),
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
