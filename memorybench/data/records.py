"""Typed, immutable records for one benchmark file (LoCoMo's conversations, LongMemEval's haystacks).

`Question` holds the gold answer and evidence; everything a model may see is an
`AskedQuestion`, which has no slot for either (DESIGN.md 4.1: gold never reaches a
reader, writer, agent workspace or index).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Turn:
    speaker: str
    dia_id: str
    text: str
    blip_caption: str | None = None

    def render(self) -> str:
        """`SPEAKER: TEXT` plus ` [image: CAPTION]` for an image turn."""
        line = f"{self.speaker}: {self.text}"
        if self.blip_caption:
            line += f" [image: {self.blip_caption}]"
        return line


@dataclass(frozen=True, slots=True)
class Session:
    index: int
    date_time: str
    turns: tuple[Turn, ...]
    #: the benchmark's own session id (LongMemEval's `haystack_session_ids`); None for LoCoMo
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class AskedQuestion:
    """What an answerer is given: the question and where it comes from, nothing else."""

    question_id: str
    sample_id: str
    category: int
    question: str
    #: when the question is asked (LongMemEval's `question_date`, shown to the reader as the
    #: authors show it); None for LoCoMo
    question_date: str | None = None


@dataclass(frozen=True, slots=True)
class Question:
    """One row of a conversation's `qa` array, with its gold kept raw."""

    question_id: str
    sample_id: str
    qa_index: int
    category: int
    question: str
    #: the raw `answer` value: str, int, or None when the row has none (category 5)
    answer: str | int | None
    adversarial_answer: str | None
    #: the turn ids that hold the answer (LoCoMo's `evidence` dia_ids; LongMemEval's turns
    #: flagged `has_answer`): scorer-side, like the gold
    evidence: tuple[str, ...]
    #: LongMemEval: when it is asked, its type's name, whether it is an abstention question
    #: (`_abs` id), and the sessions that hold the answer (scorer-side)
    question_date: str | None = None
    question_type: str | None = None
    abstention: bool = False
    answer_session_ids: tuple[str, ...] = ()
    #: every other gold-like string of the question, beside `answer` (BEAM: its rubric items
    #: and the answer-bearing fields of its ability): scorer-side, like the gold, and scanned as
    #: gold by verify's contamination check; empty for a benchmark whose gold is its answer
    other_gold: tuple[str, ...] = ()

    def asked(self) -> AskedQuestion:
        return AskedQuestion(self.question_id, self.sample_id, self.category, self.question, self.question_date)

    def gold_strings(self) -> tuple[str, ...]:
        """Every gold string of the row, for contamination scans."""
        golds = [str(self.answer)] if self.answer is not None else []
        if self.adversarial_answer:
            golds.append(self.adversarial_answer)
        golds.extend(g for g in self.other_gold if g not in golds)
        return tuple(golds)


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    #: released `session_summary` texts keyed by session index (may be empty)
    session_summaries: dict[int, str]

    @property
    def turn_count(self) -> int:
        return sum(len(s.turns) for s in self.sessions)

    def text_blob(self) -> str:
        """Session dates, turn text and captions: "does this string also occur in the conversation"."""
        lines = []
        for session in self.sessions:
            lines.append(session.date_time)
            lines.extend(t.render() for t in session.turns)
        return "\n".join(lines)
