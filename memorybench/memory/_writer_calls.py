"""How many writer calls a memory's build makes, declared by its method before any call.

A method whose memory a writer builds (our clones and the wrapped libraries alike) declares
a class method

    @classmethod
    def writer_calls(cls, conversation: Conversation, cfg: DictConfig) -> WriterCallEstimate: ...

`conversation` is what the build is handed: already cut to `memory.max_sessions` (as
`ManagedMethod.build` cuts it), so a method applies only its own cuts (Graphiti's
`max_episodes`, A-MEM's `max_notes`). The answer is one `WriterTask` per kind of call:

- **exact** where the input fixes the number: one summary per session, one graph extraction
  per session, one mem0 extraction per message pair and speaker, one A-MEM analysis per note.
  Where the prompt is fixed too, `prompts` holds each call's user message, which
  `memorybench.estimate` counts with the writer's tokenizer;
- **expected** where the number depends on what the model writes (mem0's update call per
  fact extracted): a rate measured on a real build (`basis` names it) times the input it
  scales with, and `low`/`high`, the fewest and the most calls the input and the bounds
  allow (`high` None: no bound before the run).

Neither counts repair turns: a JSON task whose reply does not parse gets one more call
(`memorybench.memory._writer`), so a build makes at most twice its tasks; the builds measured
for the rates (docs/writers.md) needed none. The estimate is printed by `plan --estimate` and
recorded in a pack's `estimate.json` (role `writer`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Optional

from pydantic import Field

from memorybench.records import Record

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig


#: what our writer may add to any count (`memorybench.memory._writer.Writer.call`)
REPAIR_TURNS = "repair turns (at most one per task, after a reply that does not parse)"


class WriterTask(Record):
    """One kind of writer call in a build: its number, exact or expected."""

    #: the writer task (a method's template role: `extract`, `update`) or the library's call
    task: str
    #: the calls expected; the exact number when `exact`
    calls: int
    #: the fewest and the most calls the input and the bounds allow (high None: unbounded)
    low: int
    high: Optional[int]
    #: whether the input fixes the number (else `calls` is an expectation, see `rate`)
    exact: bool
    #: for an expected number: calls per unit of input, measured, the unit, and the units in
    #: this build (calls = per x rate, rounded once over a run's sum, not per conversation)
    rate: Optional[float] = None
    unit: Optional[str] = None
    per: Optional[int] = None
    #: each call's user message, where known before any call (one per call)
    prompts: list[str] = Field(default_factory=list)
    #: whether `prompts` are the messages as sent (else parts that earlier replies decide are
    #: sized as their bound allows: a saved-facts list full)
    prompts_exact: bool = True
    #: where the messages depend on earlier replies: one message as long as such a call's longest
    #: is likely to be (a saved-facts list full, the similar memories shown), counted per call
    typical_prompt: Optional[str] = None


class WriterCallEstimate(Record):
    """A build's writer calls for one conversation (or, summed with `add`, for a run)."""

    #: the method's tasks, in the order its build makes them
    tasks: list[WriterTask] = Field(default_factory=list)
    #: where an expected number rests on a measured build: which (model, data, prefix)
    basis: Optional[str] = None
    #: conversations summed
    conversations: int = 1
    #: calls the counts leave out, said in the estimate's note (None: none)
    uncounted: Optional[str] = REPAIR_TURNS

    @property
    def calls(self) -> int:
        return sum(t.calls for t in self.tasks)

    @property
    def low(self) -> int:
        return sum(t.low for t in self.tasks)

    @property
    def high(self) -> int | None:
        highs = [t.high for t in self.tasks]
        return None if any(h is None for h in highs) else sum(highs)  # type: ignore[misc]

    @property
    def exact(self) -> bool:
        return all(t.exact for t in self.tasks)

    def add(self, other: WriterCallEstimate) -> WriterCallEstimate:
        """Both builds' calls, task by task (the run's sum over its conversations)."""
        tasks = {t.task: t for t in self.tasks}
        for t in other.tasks:
            mine = tasks.get(t.task)
            if mine is None:
                tasks[t.task] = t
                continue
            high = None if mine.high is None or t.high is None else mine.high + t.high
            typical = mine.typical_prompt if len(mine.typical_prompt or "") >= len(t.typical_prompt or "") else t.typical_prompt
            calls = mine.calls + t.calls
            per = None if mine.per is None or t.per is None else mine.per + t.per
            if mine.rate is not None and mine.rate == t.rate and per is not None:
                calls = _within(round(per * mine.rate), mine.low + t.low, high)
            tasks[t.task] = mine.model_copy(
                update={
                    "calls": calls,
                    "per": per,
                    "low": mine.low + t.low,
                    "high": high,
                    "exact": mine.exact and t.exact,
                    "prompts": [*mine.prompts, *t.prompts],
                    "prompts_exact": mine.prompts_exact and t.prompts_exact,
                    "typical_prompt": typical,
                }
            )
        return WriterCallEstimate(
            tasks=list(tasks.values()),
            basis=self.basis or other.basis,
            conversations=self.conversations + other.conversations,
            uncounted=other.uncounted if self.conversations == 0 else self.uncounted,
        )


def exact(task: str, calls: int, prompts: Iterable[str] = (), *, prompts_exact: bool = True) -> WriterTask:
    """A task whose number the input fixes (and, with `prompts`, whose messages too)."""
    return WriterTask(
        task=task, calls=calls, low=calls, high=calls, exact=True, prompts=list(prompts), prompts_exact=prompts_exact
    )


def expected(
    task: str, per: int, rate: float, unit: str, *, low: int = 0, high: int | None, typical_prompt: str | None = None
) -> WriterTask:
    """A task whose number depends on the model's replies: `rate` calls per unit of input
    (`per` units in this build), rounded, kept within [low, high]."""
    return WriterTask(
        task=task,
        calls=_within(round(per * rate), low, high),
        low=low,
        high=high,
        exact=False,
        rate=rate,
        unit=unit,
        per=per,
        typical_prompt=typical_prompt,
    )


def _within(calls: int, low: int, high: int | None) -> int:
    return max(low, calls if high is None else min(calls, high))


@functools.lru_cache(maxsize=64)
def _template(relpath: str, slots: frozenset[str]) -> Any:
    from memorybench.memory._writer import load_template

    return load_template("estimate", relpath, slots)


def filler(cls: type, cfg: DictConfig, role: str) -> Any:
    """`values -> user message` of a method's writer task `role`, filled as the writer fills it
    (`Writer.call`: the template `memory.prompts.<role>` with exactly its slots)."""
    relpath = str((cfg.memory.get("prompts") or {}).get(role))
    template = _template(relpath, frozenset(cls.writer_templates[role]))
    return lambda values: template.fill(values)


def json_bounds(cfg: DictConfig) -> tuple[int | None, int]:
    """(the most items of a JSON list, the most characters of a string) the writer's reply may
    hold: `writer.json_max_items` and `writer.json_max_chars` where the writer sends the
    task's schema (`writer.json_schema`), else (None, 100): a list has no bound before the run
    and a string is assumed a short sentence."""
    node = cfg.writer
    if node.get("json_schema"):
        return int(node.json_max_items), int(node.json_max_chars)
    return None, 100


#: English words to size a stand-in text with (a run of one letter would count as far fewer tokens)
_SENTENCE = "Melanie said that she went to the park with her kids on Sunday and painted a lake at sunrise. "


def stand_in(chars: int) -> str:
    """A text of `chars` characters of plain English words (a stored fact's stand-in)."""
    return (_SENTENCE * (chars // len(_SENTENCE) + 1))[:chars].strip() or "x"


def listing(lines: int, chars: int, head: str = "- ") -> str:
    """A stand-in for a list of `lines` stored texts of `chars` characters each (a prompt's
    saved facts, the similar memories shown): what a typical prompt is sized with."""
    return "\n".join(f"{head.format(n=n + 1)}{stand_in(chars)}" for n in range(lines)) or "(none)"


__all__ = [
    "REPAIR_TURNS",
    "WriterCallEstimate",
    "WriterTask",
    "exact",
    "expected",
    "filler",
    "json_bounds",
    "listing",
    "stand_in",
]
