"""LongMemEval's reader prompt against the authors' pinned `prepare_prompt` (issue 32, items 3-4):
the same made haystack, question and date give the same bytes, for each reading method and
history format."""

from __future__ import annotations

import ast
import copy
import json
import random
from types import SimpleNamespace

import pytest

from memorybench.benchmarks.longmemeval.reader import (
    DEFAULT_HISTORY_FORMAT,
    DEFAULT_READING_METHOD,
    NOTE_MAX_TOKENS,
    READER_MAX_TOKENS,
    READER_TEMPERATURE,
    HistorySession,
    chain_of_note_prompt,
    reader_prompt,
    reader_template,
    render_history,
)
from memorybench.data import pins
from memorybench.benchmarks.longmemeval.pins import RUN_GENERATION
from memorybench.errors import UserError
from score.longmemeval_authors import ScriptedTokenizer, load


@pytest.fixture(scope="module")
def authors():
    return load(RUN_GENERATION)


def _entry(seed: int) -> dict:
    """A question in LongMemEval's format: dates not in file order (as the oracle file), two
    sessions on one date, evidence flags, braces, non-ASCII text, padded contents."""
    rng = random.Random(seed)
    n = rng.randint(1, 7)
    days = [rng.randint(1, 28) for _ in range(n)]
    if n > 2:
        days[2] = days[0]  # a tie: the stable sort keeps file order
    dates = [f"2023/05/{d:02d} ({['Mon', 'Tue', 'Wed'][d % 3]}) {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}" for d in days]
    if n > 2:
        dates[2] = dates[0]
    sessions = []
    for _ in range(n):
        turns = []
        for t in range(rng.randint(1, 5)):
            text = rng.choice(
                [
                    "I adopted a beagle named {Rex}.",
                    "  Caf\u00e9 visits \u201924 \n",
                    'Sure \u2014 here\'s a plan:\n1. {}\n2. "x"',
                    "ok",
                    "\u4f60\u597d \U0001f436",
                ]
            )
            turn = {"role": "user" if t % 2 == 0 else "assistant", "content": text}
            if rng.random() < 0.5:
                turn["has_answer"] = rng.random() < 0.5
            turns.append(turn)
        sessions.append(turns)
    return {
        "question_id": f"q{seed}",
        "question": "How many {days} did I spend in Caf\u00e9 Lisbon?",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_dates": dates,
        "haystack_session_ids": [f"answer_{seed}_{s}" if s % 2 else f"sharegpt_{seed}_{s}" for s in range(n)],
        "haystack_sessions": sessions,
    }


def _ours(entry: dict, notes: list[str] | None = None) -> list[HistorySession]:
    return [
        HistorySession(
            date, tuple({"role": t["role"], "content": t["content"]} for t in turns), None if notes is None else notes[i]
        )
        for i, (date, turns) in enumerate(zip(entry["haystack_dates"], entry["haystack_sessions"]))
    ]


def _authors_prompt(authors, entry, *, cot: bool, history_format: str, useronly: bool, con: bool = False, client=None):
    return authors.prepare_prompt(
        copy.deepcopy(entry),
        "orig-session",
        1000,
        useronly,
        history_format,
        cot,
        tokenizer=ScriptedTokenizer(),
        tokenizer_backend="openai",
        max_retrieval_length=10**9,
        merge_key_expansion_into_value="none",
        con=con,
        con_client=client,
        con_model="reader-model",
    )


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("history_format", ["json", "nl"])
@pytest.mark.parametrize("reading_method", ["direct", "con"])
@pytest.mark.parametrize("user_only", [False, True])
def test_the_prompt_is_the_bytes_prepare_prompt_builds(authors, seed, history_format, reading_method, user_only):
    entry = _entry(seed)
    if user_only and not any(t["role"] == "user" for s in entry["haystack_sessions"] for t in s):
        pytest.skip("no user turn")
    expected = _authors_prompt(authors, entry, cot=reading_method == "con", history_format=history_format, useronly=user_only)
    ours = reader_prompt(
        _ours(entry),
        entry["question"],
        entry["question_date"],
        reading_method=reading_method,
        history_format=history_format,
        user_only=user_only,
    )
    assert ours.encode("utf-8") == expected.encode("utf-8")


class _NoteClient:
    """con_client: `.chat.completions.create(**kwargs)` answers a scripted note and keeps the request."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.replies: list[str] = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **kwargs):
        self.requests.append(kwargs)
        note = f'  note {len(self.requests)}: the user said {{something}} \u2014 "quoted"\n'
        self.replies.append(note)
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=note))])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("user_only", [False, True])
def test_con_separate_asks_for_notes_and_reads_them_as_the_authors_do(authors, seed, user_only):
    entry = _entry(seed)
    client = _NoteClient()
    expected = _authors_prompt(authors, entry, cot=True, history_format="json", useronly=user_only, con=True, client=client)
    sessions = _ours(entry)
    assert [r["messages"] for r in client.requests] == [
        [{"role": "user", "content": chain_of_note_prompt(s, entry["question"], entry["question_date"], user_only=user_only)}]
        for s in sessions
    ]
    assert {(r["temperature"], r["max_tokens"], r["n"], r["model"]) for r in client.requests} == {
        (0, NOTE_MAX_TOKENS, 1, "reader-model")
    }
    notes = [reply.strip() for reply in client.replies]  # the authors keep `content.strip()`
    ours = reader_prompt(
        _ours(entry, notes), entry["question"], entry["question_date"], reading_method="con-separate", user_only=user_only
    )
    assert ours == expected


def test_the_authors_default_is_con_with_json_history():
    assert (DEFAULT_READING_METHOD, DEFAULT_HISTORY_FORMAT) == ("con", "json")
    template = reader_template(step_by_step=True)
    assert template.endswith("\nQuestion: {}\nAnswer (step by step):") and template.count("{}") == 3
    assert "Answer the question step by step" in template
    plain = reader_template(step_by_step=False)
    assert plain.endswith("\nCurrent Date: {}\nQuestion: {}\nAnswer:") and "step by step" not in plain


def test_the_reader_request_settings_are_run_generations():
    tree = ast.parse(pins.pin_path(RUN_GENERATION).read_text("utf-8"))
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    source = ast.unparse(main)
    assert "gen_length = 500 if not args.cot else 800" in source
    assert "'temperature': 0, 'max_tokens': gen_length" in source
    assert READER_TEMPERATURE == 0 and READER_MAX_TOKENS == {"direct": 500, "con": 800, "con-separate": 800}


def test_the_history_keeps_no_gold_and_sorts_by_date():
    sessions = [
        HistorySession("2023/05/20 (Sat) 10:15", ({"role": "user", "content": "late"},)),
        HistorySession("2023/05/11 (Thu) 17:50", ({"role": "user", "content": "early", "has_answer": True},)),
    ]  # type: ignore[dict-item]
    history = render_history(sessions)
    assert history == (
        "\n### Session 1:\nSession Date: 2023/05/11 (Thu) 17:50\nSession Content:\n\n"
        '[{"role": "user", "content": "early"}]\n'
        "\n### Session 2:\nSession Date: 2023/05/20 (Sat) 10:15\nSession Content:\n\n"
        '[{"role": "user", "content": "late"}]\n'
    )
    assert "has_answer" not in history


def test_bad_choices_fail_in_one_line():
    s = [HistorySession("2023/05/11 (Thu) 17:50", ({"role": "user", "content": "x"},))]
    with pytest.raises(UserError, match="reading method 'cot' is not one of direct, con, con-separate"):
        reader_prompt(s, "q", "d", reading_method="cot")
    with pytest.raises(UserError, match="history format 'xml'"):
        reader_prompt(s, "q", "d", history_format="xml")
    with pytest.raises(UserError, match="give every session its note"):
        reader_prompt(s, "q", "d", reading_method="con-separate")
    noted = [HistorySession(s[0].date, s[0].turns, "a note")]
    with pytest.raises(UserError, match="json history format only"):
        reader_prompt(noted, "q", "d", reading_method="con-separate", history_format="nl")
    with pytest.raises(UserError, match="not notes; use con-separate"):
        reader_prompt(noted, "q", "d")
    with pytest.raises(UserError, match="at least one session"):
        reader_prompt([], "q", "d")
    assert json.loads(render_history(noted).split("Session Content:\n\n", 1)[1]) == {"session_summary": "a note"}
