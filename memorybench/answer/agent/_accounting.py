"""The gateway's accounting as the Codex answerer uses it: each question's budget, the rows
of its requests (agent/requests.jsonl) and their sums checked against Codex's own
`turn.completed` usage, and the outcome of a turn the budget ended.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from memorybench.answer.agent._events import Outcome
from memorybench.answer.agent._records import AgentRequestV2, Budget, GatewaySummary
from memorybench.answer.agent.gateway import GatewayReport
from memorybench.answer.prompt import SYSTEM_MESSAGE, fill_template
from memorybench.pack.journal import Journal
from memorybench.templates import PromptTemplate

BUDGET_KEYS = ("max_requests", "max_input_tokens", "max_output_tokens", "max_total_tokens")
#: the gateway's usage keys -> the CLI's turn.completed usage keys
CLI_USAGE_KEYS = {
    "input_tokens": "input_tokens",
    "cached_tokens": "cached_input_tokens",
    "output_tokens": "output_tokens",
    "reasoning_tokens": "reasoning_output_tokens",
}


@dataclass
class BudgetConfig:
    """Per question, enforced by the gateway on every model request (null: no limit)."""

    max_requests: Optional[int] = None
    max_input_tokens: Optional[int] = None
    max_output_tokens: Optional[int] = None
    max_total_tokens: Optional[int] = None
    #: the total token budget of each question is the reader's: its prompt tokens for that question + reader.max_tokens
    match_reader: bool = False


@dataclass
class AuditConfig:
    #: keep each request body and reply text in agent/requests.jsonl (inside the pack only); off: hashes and lengths
    raw: bool = False


def question_budget(
    limits: dict[str, int],
    match_reader: bool,
    question: str,
    memory: str,
    reader_prompt: PromptTemplate | None,
    reader_max_tokens: int | None,
) -> Budget | None:
    """A question's budget: the configured limits; with match_reader the reader's tokens as the total."""
    if not limits and not match_reader:
        return None
    limits = dict(limits)
    if not match_reader:
        return Budget(**limits)
    from memorybench.memory._tokens import ENCODING, count_tokens

    assert reader_prompt is not None and reader_max_tokens is not None
    user = fill_template(reader_prompt.text, memory, question)
    prompt_tokens = count_tokens(SYSTEM_MESSAGE) + count_tokens(user)
    total = prompt_tokens + int(reader_max_tokens)
    limits["max_total_tokens"] = min(total, limits.get("max_total_tokens", total))
    return Budget(
        **limits,
        source="reader",
        reader_prompt_tokens=prompt_tokens,
        reader_max_tokens=int(reader_max_tokens),
        tokenizer=ENCODING,
    )


def summarize(report: GatewayReport, out: Outcome, budget: Budget | None, journal: Journal, *, run_id: str) -> GatewaySummary:
    """Rows to `journal` (agent/requests.jsonl); their sums, checked against the CLI's turn.completed usage."""
    totals = dict.fromkeys(CLI_USAGE_KEYS.values(), 0)
    retries = 0
    for row in report.rows:
        journal.append(AgentRequestV2(run_id=run_id, **row).row())
        for ours, theirs in CLI_USAGE_KEYS.items():
            totals[theirs] += int(row.get(ours) or 0)
        retries += int(row.get("retries") or 0)
    # a turn that failed (a budget refusal, an error) reports no usage: nothing to check against
    differ = (
        [f"{k}: gateway {v}, cli {int(out.usage.get(k, 0))}" for k, v in totals.items() if v != int(out.usage.get(k, 0))]
        if out.turns
        else []
    )
    matches = (not differ) if out.turns else None
    refused = report.refused
    return GatewaySummary(
        requests=len(report.rows),
        refused=len(refused),
        budget_exceeded=refused[0]["reason"] if refused else None,
        retries=retries,
        usage=totals,
        usage_matches_cli=matches,
        mismatch="; ".join(differ) or None,
        unattributed=report.unattributed,
        in_flight=report.in_flight,
        budget=budget,
        not_forwarded=report.not_forwarded[:10],
    )


def budget_outcome(out: Outcome, reason: str) -> Outcome:
    """The outcome of a turn the gateway's budget ended: status budget_exceeded, the last agent message as the answer."""
    messages = [i for i in out.items if i.get("type") == "agent_message" and i.get("text") is not None]
    partial = str(messages[-1]["text"]).strip() if messages else ""
    return dataclasses.replace(out, status="budget_exceeded", answer=partial, error=f"budget exceeded: {reason}")
