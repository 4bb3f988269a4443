"""LongMemEval's reader prompt: the bytes the authors' `prepare_prompt` builds for a history.

From the pinned src/generation/run_generation.py (xiaowu0162/LongMemEval @ 9e0b455). The
prompt is a template with three `{}` slots (the history, the question's date, the question),
taken out of the pinned file as it is (`reader_template`), filled once with `str.format`:

    I will give you several history chats between you and a user. Please answer the question
    based on the relevant chat history.[ Answer the question step by step: first extract all the
    relevant information, and then reason over the information to get the answer.]\\n\\n\\n
    History Chats:\\n\\n{history}\\n\\nCurrent Date: {question_date}\\nQuestion: {question}\\n
    Answer[ (step by step)]:

The history (`render_history`) is the sessions shown, sorted by their date strings (a
stable sort: `2023/05/11 (Thu) 17:50` sorts by time; the oracle file's sessions are not in
time order), each as `\\n### Session {i}:\\nSession Date: {date}\\nSession Content:\\n{turns}\\n`
where the turns are, in the `json` history format, `\\n` + `json.dumps` of the session's list
of `{"role", "content"}` turns (`has_answer` removed; non-ASCII escaped as json.dumps does),
and in the `nl` format `\\n\\n{role}: {content stripped}` per turn.

Reading methods, as run_generation.sh names them (its `READING_METHOD`):

- `direct` (`--cot false`): the plain template;
- `con` (`--cot true`): the step-by-step template. **The authors' default**: run_generation.sh
  defaults to `con` with the `json` history format and `useronly=false`, and the README
  recommends exactly these ("We recommend `con`, which instructs the model to first extract
  useful information and then reason over it"; "We recommend using `json`"; USERONLY
  "We recommend setting it to `false`"). `DEFAULT_READING_METHOD`, `DEFAULT_HISTORY_FORMAT`.
- `con-separate` (`--cot true --con true`): first one call per session with the Chain-of-Note
  prompt (`chain_of_note_prompt`: the session's date, its turns as JSON, the question's date
  and the question; the reader model, temperature 0, max_tokens 500), then the step-by-step
  template over the notes, each session's content being `{"session_summary": note}` (json
  format only: the authors' `nl` rendering fails on a note).

Which sessions are shown is the caller's: with the full history (`full-history-session`,
retriever type `orig-session`) the authors keep the last TOPK sessions in haystack order
(TOPK 1000 recommended, so all of them); with a retriever (`flat-session`) the first TOPK in
rank order. This module renders what it is given. Two of the authors' steps are not done here:
the history is never truncated (they cut it to the reader's context less the answer's tokens
less 1,000, in the reader's tokenizer, printing a line), and turn-level histories
(`orig-turn`, `flat-turn`: a turn or a user-assistant round per block) are not rendered.

The reader's request (run_generation.py `main`): one user message, temperature 0, max_tokens
500 (`direct`) or 800 (`con`, `con-separate`), `READER_MAX_TOKENS`.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memorybench.data.pinned_source import function_node, string_constants
from memorybench.data.pins import Pin
from memorybench.benchmarks.longmemeval.pins import RUN_GENERATION
from memorybench.data.records import Conversation
from memorybench.errors import UserError
from memorybench.memory.base import BuiltMemory, MemoryItem
from memorybench.templates import BenchmarkReaderTemplate

__all__ = [
    "DEFAULT_HISTORY_FORMAT",
    "DEFAULT_READING_METHOD",
    "HISTORY_FORMATS",
    "NOTE_MAX_TOKENS",
    "READER_MAX_TOKENS",
    "READER_TEMPERATURE",
    "READING_METHODS",
    "READERS",
    "HistorySession",
    "LongMemEvalReaderTemplate",
    "chain_of_note_prompt",
    "chain_of_note_template",
    "reader_prompt",
    "reader_template",
    "render_history",
]

READING_METHODS: tuple[str, ...] = ("direct", "con", "con-separate")
#: run_generation.sh: `reading_method=${7:-"con"}`, `history_format=${5:-"json"}`, `useronly=${6:-"false"}`
DEFAULT_READING_METHOD = "con"
HISTORY_FORMATS: tuple[str, ...] = ("json", "nl")
DEFAULT_HISTORY_FORMAT = "json"
#: run_generation.py main: kwargs temperature 0, max_tokens gen_length (`500 if not args.cot else 800`)
READER_TEMPERATURE = 0
READER_MAX_TOKENS: dict[str, int] = {"direct": 500, "con": 800, "con-separate": 800}
#: the Chain-of-Note call's max_tokens (prepare_prompt, `con=True`)
NOTE_MAX_TOKENS = 500

_PREPARE_PROMPT = "prepare_prompt"
#: the template branch of prepare_prompt without fact expansion, found by its test
_PLAIN_BRANCH = "merge_key_expansion_into_value is None or merge_key_expansion_into_value == 'none'"
# the rendering's format strings: each checked to be a literal of the pinned prepare_prompt when used
_SESSION_BLOCK = "\n### Session {}:\nSession Date: {}\nSession Content:\n{}\n"
_NL_TURN = "\n\n{}: {}"
_JSON_LEAD = "\n"


@dataclass(frozen=True)
class HistorySession:
    """One session as the reader sees it: its date string, its turns (`role` and `content`, no
    gold flag), and for `con-separate` the note written for it (which then replaces the turns)."""

    date: str
    turns: tuple[Mapping[str, str], ...]
    note: str | None = None


def _function(pins: str | os.PathLike[str] | None) -> ast.FunctionDef:
    return function_node(RUN_GENERATION, _PREPARE_PROMPT, pins)


def _literal(node: ast.stmt, what: str) -> str:
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return node.value.value
    raise UserError(f"{RUN_GENERATION.url}: prepare_prompt's {what} is not a string literal; the pin is broken")


def reader_template(step_by_step: bool, pins: str | os.PathLike[str] | None = None) -> str:
    """prepare_prompt's `answer_prompt_template` without fact expansion: step by step (`cot`) or plain."""
    for node in ast.walk(_function(pins)):
        if isinstance(node, ast.If) and ast.unparse(node.test) == _PLAIN_BRANCH:
            inner = node.body[0]
            if isinstance(inner, ast.If) and ast.unparse(inner.test) == "cot":
                return _literal(inner.body[0] if step_by_step else inner.orelse[0], "template")
    raise UserError(f"{RUN_GENERATION.url}: prepare_prompt has no template branch; the pin is broken")


def chain_of_note_template(pins: str | os.PathLike[str] | None = None) -> str:
    """prepare_prompt's `con_prompt` (four `{}` slots: session date, session JSON, question date, question)."""
    for node in ast.walk(_function(pins)):
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "con_prompt":
            return _literal(node, "con_prompt")
    raise UserError(f"{RUN_GENERATION.url}: prepare_prompt has no con_prompt; the pin is broken")


def _check_rendering(pins: str | os.PathLike[str] | None) -> None:
    literals = set(string_constants(_function(pins)))
    missing = [s for s in (_SESSION_BLOCK, _NL_TURN, _JSON_LEAD) if s not in literals]
    if missing:
        raise UserError(
            f"{RUN_GENERATION.url}: prepare_prompt renders history otherwise (no literal {missing[0]!r}); the pin is broken"
        )


def _turns(session: HistorySession, user_only: bool) -> list[dict[str, str]]:
    turns = [{"role": t["role"], "content": t["content"]} for t in session.turns]
    return [t for t in turns if t["role"] == "user"] if user_only else turns


def _check_choice(value: str, choices: Sequence[str], what: str) -> None:
    if value not in choices:
        raise UserError(f"LongMemEval's {what} {value!r} is not one of {', '.join(choices)}")


def render_history(
    sessions: Sequence[HistorySession],
    *,
    history_format: str = DEFAULT_HISTORY_FORMAT,
    user_only: bool = False,
    pins: str | os.PathLike[str] | None = None,
) -> str:
    """prepare_prompt's `history_string` for these sessions (session level; see the module docstring)."""
    _check_choice(history_format, HISTORY_FORMATS, "history format")
    _check_rendering(pins)
    if not sessions:
        raise UserError("a LongMemEval reader prompt needs at least one session (the authors' code asserts a history)")
    ordered = sorted(sessions, key=lambda s: s.date)  # list.sort: stable, as the authors' sort
    history = ""
    for i, session in enumerate(ordered):
        if session.note is not None:
            if history_format != "json":
                raise UserError(
                    "con-separate notes render in the json history format only (the authors' nl "
                    "rendering fails on a note); use history_format=json"
                )
            body = _JSON_LEAD + json.dumps({"session_summary": session.note})
        elif history_format == "json":
            body = _JSON_LEAD + json.dumps(_turns(session, user_only))
        else:
            body = "".join(_NL_TURN.format(t["role"], t["content"].strip()) for t in _turns(session, user_only))
        history += _SESSION_BLOCK.format(i + 1, session.date, body)
    return history


def reader_prompt(
    sessions: Sequence[HistorySession],
    question: str,
    question_date: str,
    *,
    reading_method: str = DEFAULT_READING_METHOD,
    history_format: str = DEFAULT_HISTORY_FORMAT,
    user_only: bool = False,
    pins: str | os.PathLike[str] | None = None,
) -> str:
    """The reader's user message, as prepare_prompt builds it (without truncation). For
    `con-separate` every session must carry its note (`chain_of_note_prompt` asks for it)."""
    _check_choice(reading_method, READING_METHODS, "reading method")
    noted = [s.note is not None for s in sessions]
    if reading_method == "con-separate" and not all(noted):
        raise UserError("con-separate reads notes: give every session its note (ask with chain_of_note_prompt)")
    if reading_method != "con-separate" and any(noted):
        raise UserError(f"reading method {reading_method} reads the sessions' turns, not notes; use con-separate")
    history = render_history(sessions, history_format=history_format, user_only=user_only, pins=pins)
    template = reader_template(step_by_step=reading_method != "direct", pins=pins)
    return template.format(history, question_date, question)


def chain_of_note_prompt(
    session: HistorySession,
    question: str,
    question_date: str,
    *,
    user_only: bool = False,
    pins: str | os.PathLike[str] | None = None,
) -> str:
    """The `con-separate` note request for one session (one user message to the reader model)."""
    return chain_of_note_template(pins).format(session.date, json.dumps(_turns(session, user_only)), question_date, question)


def authors_history(conversation: Conversation, pins: str | None = None) -> BuiltMemory:
    """A LongMemEval haystack as its authors' reader sees it: every session, sorted by date,
    in run_generation.py's json history format (`render_history`); one
    item per session (its turns as the json the history holds), the text the whole history."""
    sessions = [
        HistorySession(s.date_time, tuple({"role": t.speaker, "content": t.text} for t in s.turns)) for s in conversation.sessions
    ]
    items = [
        MemoryItem(
            item_id=f"session_{s.index}", text=json.dumps([dict(t) for t in h.turns]), sources=tuple(t.dia_id for t in s.turns)
        )
        for s, h in zip(conversation.sessions, sessions)
        if s.turns
    ]
    return BuiltMemory(conversation.sample_id, items, text=render_history(sessions, pins=pins))


@dataclass(frozen=True)
class LongMemEvalReaderTemplate(BenchmarkReaderTemplate):
    """`reader.prompt=longmemeval_con` (the authors' default: step by step) or
    `longmemeval_direct`: LongMemEval's reader prompt as its run_generation.py
    `prepare_prompt` builds it, the template taken out of the pinned file. Its three `{}`
    slots are the history, the question's date and the question; the history is the memory
    (full_context renders a LongMemEval haystack in the authors' json history format). The
    only message, a user message."""

    name: str
    step_by_step: bool
    system_pin: Pin | None = None
    memories: tuple[str, ...] | None = None
    extra_slots: tuple[str, ...] = ("question_date",)
    message_role: Literal["system", "user"] = "user"

    def text(self, pins: str | os.PathLike[str] | None = None) -> str:
        return reader_template(self.step_by_step, pins)

    def system(self, pins: str | os.PathLike[str] | None = None) -> str | None:
        return None

    def render(self, text: str, slots: Mapping[str, str]) -> str:
        """The authors' `template.format(history, question_date, question)`."""
        try:
            return text.format(slots["memory"], slots["question_date"], slots["question"])
        except (IndexError, KeyError):
            raise ValueError("not LongMemEval's reader template (three {} slots: history, date, question)") from None

    def question_values(self, asked: Any, speakers: tuple[str, str] = ("", "")) -> dict[str, str]:
        if asked.question_date is None:
            raise UserError(
                f"{asked.question_id} has no question date: reader.prompt={self.name} is "
                "LongMemEval's prompt; use it with dataset=longmemeval_*"
            )
        return {"question_date": asked.question_date}

    def sizing_values(self, speakers: tuple[str, str] = ("", "")) -> dict[str, str]:
        return {"question_date": "2023/05/30 (Tue) 23:40"}  # a date is a few tokens: as LongMemEval writes one


#: the record's `reader_templates`: its pinned reader prompts by `reader.prompt` name
READERS: dict[str, LongMemEvalReaderTemplate] = {
    t.name: t
    for t in (LongMemEvalReaderTemplate("longmemeval_con", True), LongMemEvalReaderTemplate("longmemeval_direct", False))
}
