"""Mem0's LLM judge (DESIGN.md 5.2): the prompt it sends and how its reply is read; and our
strict judge (`strict`, `StrictJudge`: the same label contract, a prompt of ours,
prompts/judges/strict_v1.txt, pinned by its sha256 here, that requires the answer's
specifics to match the gold; docs/judges.md).

The protocol is the registered judge `mem0` (`JUDGES.get("mem0")`, class `Mem0Judge`):
what to judge (`skips`), the request (`request`), how a reply is read (`verdict`) and
the per-row lexical scores Mem0 reports beside J (`row_scores`). The `autorater` stage
only runs the resumable loop around it; another judge protocol is one more class
registered under its own name, with the same methods (`JudgeProtocol`): LongMemEval's,
`longmemeval` (`memorybench.benchmarks.longmemeval.judge`; the registry names each protocol's
module, `memorybench.registry.JUDGES`).

A port of mem0 ``evaluation/metrics/llm_judge.py`` and ``mem0/memory/utils.py``
(``extract_json``) at ece7ff6b84b3e55336fcf2e17253b074d2d5166d, where ``evals.py`` calls

    ACCURACY_PROMPT.format(question=str(q), gold_answer=str(answer), generated_answer=str(response))
    label = json.loads(extract_json(reply))["label"]
    return 1 if label == "CORRECT" else 0

The prompt is the pinned ``ACCURACY_PROMPT`` (``memorybench.data.pins``), never a copy in
this repository. It is filled with ``str.format`` exactly as Mem0 fills it: one pass, so
braces inside a question or an answer are copied verbatim and never read as slots.

Reading a reply (``parse_judge_reply``): strip it; take the first code fence's content
(```` ```json ```` or a bare fence), else the text from the first ``{`` to the last ``}``;
``json.loads``; the ``label`` key. Outcomes (label_raw / score / status):

    {"label": "CORRECT"}                        CORRECT / 1 / CORRECT
    {"label": "WRONG"}                          WRONG / 0 / WRONG
    the same in a code fence, or amid prose     as the object inside
    prose naming both labels, then the JSON     the JSON's label (never a word search)
    {"label": "correct"}, "Correct", " CORRECT" kept as written / 0 / WRONG, label_standard=False
    {"label": "CORRECT or WRONG"}               kept as written / 0 / WRONG, label_standard=False
    prose only, no JSON (even "CORRECT")        null / null / FAILED
    invalid or truncated JSON, two objects      null / null / FAILED
    no "label" key, a JSON array, empty reply   null / null / FAILED
    {"label": true} / 1 / null (not a string)   null / null / FAILED
    {"label": "CORRECT", "label": "WRONG"}      null / null / FAILED

Where Mem0 produces a score we produce the same score: only the exact string
``CORRECT`` scores 1, so a lowercase ``correct`` scores 0 as in Mem0, but it *is* parsed,
its raw text is recorded and it is counted as a non-standard label so that it shows. Where
Mem0's script raises (no JSON, no ``label`` key) we record a judge failure, counted and
listed, never a silent WRONG. Two deliberate departures, both on replies Mem0 cannot
score meaningfully: a label that is not a string (Mem0: 0) and a JSON object with two
different ``label`` values (Mem0: the last one wins) are failures. One recovery where
Mem0 raises: when a code fence's content is not JSON (a ``JSON`` tag in capitals, prose
inside the fence), its first ``{`` to last ``}`` is tried.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from memorybench import PROMPTS_DIR
from memorybench.benchmark import DEFAULT as DEFAULT_BENCHMARK
from memorybench.data.pins import MEM0_ACCURACY_PROMPT, Pin, pin_path
from memorybench.errors import UserError
from memorybench.hashing import sha256_text
from memorybench.llm.records import ChatRequest
from memorybench.registry import JUDGES

__all__ = [
    "CORRECT",
    "DEFAULT_PROTOCOL",
    "JUDGE_SLOTS",
    "RESPONSE_FORMAT",
    "WRONG",
    "JudgeCall",
    "JudgeParse",
    "JudgeProtocol",
    "Mem0Judge",
    "STRICT_PROMPT",
    "STRICT_PROMPT_SHA256",
    "StrictJudge",
    "build_judge_prompt",
    "check_judge_template",
    "extract_json",
    "label_score",
    "parse_judge_label",
    "parse_judge_reply",
    "text_sha256",
]

CORRECT = "CORRECT"
WRONG = "WRONG"
STANDARD_LABELS = (CORRECT, WRONG)
#: the three ``str.format`` fields of ACCURACY_PROMPT
JUDGE_SLOTS = ("question", "gold_answer", "generated_answer")
#: Mem0's judge asks for JSON mode
RESPONSE_FORMAT: dict[str, str] = {"type": "json_object"}

# mem0/memory/utils.py extract_json at the pinned commit, verbatim
_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL)
_FIELD = re.compile(r"\{([^{}]*)\}")


def text_sha256(text: str) -> str:
    return sha256_text(text)


def check_judge_template(template: str) -> None:
    """Refuse a template that ``str.format`` with the three judge fields cannot fill."""
    fields = _FIELD.findall(template.replace("{{", "").replace("}}", ""))
    missing = [slot for slot in JUDGE_SLOTS if slot not in fields]
    unknown = sorted({f for f in fields if f not in JUDGE_SLOTS})
    if missing or unknown:
        raise ValueError(
            f"judge template must have the fields {{question}}, {{gold_answer}}, {{generated_answer}} only; "
            f"missing {missing}, unknown {unknown}"
        )


def build_judge_prompt(template: str, question: Any, gold: Any, prediction: Any) -> str:
    """The judge's one user message, as Mem0 builds it.

    ``evals.py`` passes ``str(item["question"])``, ``str(item["answer"])`` (an int gold
    becomes ``"3"``) and ``str(item["response"])`` to ``ACCURACY_PROMPT.format(...)``;
    ``format`` substitutes once, so a ``{gold_answer}`` typed inside a prediction stays
    literal text.
    """
    return template.format(question=str(question), gold_answer=str(gold), generated_answer=str(prediction))


def extract_json(text: str) -> str:
    """Mem0's ``extract_json``: a code fence's content, else first ``{`` to last ``}``, else the text."""
    text = text.strip()
    match = _FENCE.search(text)
    if match:
        return match.group(1)
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end != -1 and end > start:
        return text[start : end + 1]
    return text


def _brace_slice(text: str) -> str | None:
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if start != -1 and end > start else None


class _ConflictingLabels(ValueError):
    pass


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    labels = [value for key, value in pairs if key == "label"]
    if len(labels) > 1 and any(value != labels[0] for value in labels[1:]):
        raise _ConflictingLabels(f"the JSON object has {len(labels)} different label values: {labels!r}")
    return dict(pairs)


@dataclass(frozen=True)
class JudgeParse:
    """What a judge reply says: the raw label, or why there is none."""

    #: the ``label`` value exactly as the judge wrote it; None when the reply has none
    label: str | None
    #: why the reply could not be read (None when ``label`` is set)
    error: str | None = None

    @property
    def score(self) -> int | None:
        return label_score(self.label)

    @property
    def standard(self) -> bool | None:
        """True for exactly CORRECT or WRONG; None for a failure."""
        return None if self.label is None else self.label in STANDARD_LABELS

    @property
    def status(self) -> str:
        if self.label is None:
            return "FAILED"
        return CORRECT if self.score == 1 else WRONG


def label_score(label: str | None) -> int | None:
    """Mem0's ``1 if label == "CORRECT" else 0``; None (a failure) stays None."""
    if label is None:
        return None
    return 1 if label == CORRECT else 0


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat[:120] + ("..." if len(flat) > 120 else ""))


def parse_judge_reply(text: str | None) -> JudgeParse:
    """Read a judge reply by Mem0's rules (see the module docstring for the table)."""
    if not isinstance(text, str) or not text.strip():
        return JudgeParse(None, "empty reply")
    candidate = extract_json(text)
    tries = [candidate]
    fenced = _FENCE.search(text.strip()) is not None
    inner = _brace_slice(candidate) if fenced else None
    if inner is not None and inner != candidate:
        tries.append(inner)
    obj: Any = None
    error = None
    for attempt in tries:
        try:
            obj = json.loads(attempt, object_pairs_hook=_pairs_hook)
            error = None
            break
        except _ConflictingLabels as e:
            return JudgeParse(None, str(e))
        except ValueError as e:
            error = f"no JSON object in the reply ({getattr(e, 'msg', e)}): {_excerpt(text)}"
    if error is not None:
        return JudgeParse(None, error)
    if not isinstance(obj, dict):
        return JudgeParse(None, f"the reply's JSON is a {type(obj).__name__}, not an object: {_excerpt(text)}")
    if "label" not in obj:
        return JudgeParse(None, f'the reply\'s JSON has no "label" key (keys: {sorted(obj)[:5]}): {_excerpt(text)}')
    label = obj["label"]
    if not isinstance(label, str):
        return JudgeParse(None, f"the label is not a string: {json.dumps(label)[:60]}")
    return JudgeParse(label)


def parse_judge_label(text: str | None) -> str | None:
    """The raw ``label`` string of a judge reply, or None when it cannot be read (a failure)."""
    return parse_judge_reply(text).label


# -- the protocol as a registered judge ---------------------------------------------------
#: the protocol of a judge config without a `protocol` key
DEFAULT_PROTOCOL = "mem0"


class JudgedRow(Protocol):
    """What a judge reads of a stored answer (a `prediction.v1` record)."""

    question: str
    gold: Any
    prediction: str
    category: int


@dataclass(frozen=True)
class JudgeCall:
    """One judge request and what rebuilds its message from the stored template."""

    request: ChatRequest
    #: the template's fields exactly as substituted
    slots: dict[str, str]
    #: sha256 of the filled user message
    payload_sha256: str
    #: the template file (under the judge folder's prompts/) the message is filled from, and its sha256
    template_file: str = ""
    template_sha256: str = ""
    #: the system message sent before it, if any (BEAM's alignment call); its text is the protocol's
    system: str | None = None


class JudgeProtocol(Protocol):
    """A judge protocol: the autorater's loop asks it what to judge, what to send, how to read."""

    name: ClassVar[str]
    #: the benchmark whose packs it judges (`memorybench.benchmark`): its categories are that benchmark's kinds
    benchmark: ClassVar[str]
    #: what its labels are compared with when the judge is the published one ("Mem0's published J")
    published: ClassVar[str]
    #: template file name (copied under autorater/<judge id>/prompts/) -> text; `prompt_info` is
    #: told where they are: the copy of the one template, or the folder of several
    templates: dict[str, str]
    #: sha256 of the protocol's prompt (the judge identity's `prompt_sha256`)
    template_sha256: str
    #: the response format it asks for (None: the request has none)
    response_format: ClassVar[dict[str, str] | None]
    #: judge config values the protocol fixes (set over the composed config before anything else)
    request_settings: ClassVar[dict[str, Any]]
    #: the categories whose rows get a request (the others get a SKIPPED verdict)
    judged_categories: ClassVar[tuple[int, ...]]

    def skips(self, row: JudgedRow) -> bool: ...
    def template_file(self, row: JudgedRow) -> str: ...
    def slots(self, row: JudgedRow) -> dict[str, str]: ...
    def fill(self, template: str, slots: Mapping[str, str]) -> str: ...
    def prompt_text(self, row: JudgedRow) -> str: ...
    def request(self, row: JudgedRow, *, model: str, sampling: Mapping[str, Any]) -> JudgeCall: ...
    def verdict(self, text: str | None) -> JudgeParse: ...
    def row_scores(self, row: JudgedRow) -> dict[str, float]: ...
    def prompt_info(self, stored_at: str) -> dict[str, Any]: ...


@JUDGES.register("mem0")
class Mem0Judge:
    """Mem0's judge: the pinned ACCURACY_PROMPT as one user message, JSON mode, CORRECT-only
    scoring, category 5 skipped (no request, not in J), Mem0's F1 and BLEU-1 per row."""

    name: ClassVar[str] = "mem0"
    pin: ClassVar[Pin] = MEM0_ACCURACY_PROMPT
    benchmark: ClassVar[str] = DEFAULT_BENCHMARK
    #: what its labels would be compared with (for the labels of a judge that is not it)
    published: ClassVar[str] = "Mem0's published J"
    prompt_file: ClassVar[str] = "mem0_accuracy_prompt.txt"
    response_format: ClassVar[dict[str, str] | None] = RESPONSE_FORMAT
    request_settings: ClassVar[dict[str, Any]] = {}
    judged_categories: ClassVar[tuple[int, ...]] = (1, 2, 3, 4)

    def __init__(self, template: str) -> None:
        check_judge_template(template)
        self.template = template
        self.template_sha256 = text_sha256(template)
        self.templates = {self.prompt_file: template}

    @classmethod
    def load(cls, pins: str | os.PathLike[str] | None = None) -> Mem0Judge:
        """The judge with the pinned template from the pins folder (verified against its sha256)."""
        return cls(pin_path(cls.pin, pins).read_bytes().decode("utf-8"))

    def skips(self, row: JudgedRow) -> bool:
        return row.category not in self.judged_categories

    @classmethod
    def template_file(cls, row: Any) -> str:
        """One template for every row."""
        return cls.prompt_file

    @staticmethod
    def slots(row: Any) -> dict[str, str]:
        return {"question": str(row.question), "gold_answer": str(row.gold), "generated_answer": str(row.prediction)}

    @staticmethod
    def fill(template: str, slots: Mapping[str, str]) -> str:
        """The message from a stored template and its slots (`build_judge_prompt`)."""
        return build_judge_prompt(template, slots["question"], slots["gold_answer"], slots["generated_answer"])

    def prompt_text(self, row: JudgedRow) -> str:
        """The one user message for `row` (also what sizes the embedded judge's context)."""
        slots = self.slots(row)
        return build_judge_prompt(self.template, slots["question"], slots["gold_answer"], slots["generated_answer"])

    def request(self, row: JudgedRow, *, model: str, sampling: Mapping[str, Any]) -> JudgeCall:
        """The request Mem0 sends: one user message, `sampling`'s temperature (0 for judge=mem0),
        JSON mode, no stop sequence. Two fields Mem0 leaves out are sent: `max_tokens` (the
        client always sends it) and `seed` when the config sets one."""
        slots = self.slots(row)
        prompt = build_judge_prompt(self.template, slots["question"], slots["gold_answer"], slots["generated_answer"])
        seed = sampling.get("seed")
        request = ChatRequest(
            model=model,
            messages=({"role": "user", "content": prompt},),
            temperature=float(sampling["temperature"]),
            max_tokens=int(sampling["max_tokens"]),
            seed=None if seed is None else int(seed),
            response_format=dict(self.response_format or {}),
            # no stop sequence, as Mem0: in JSON mode the embedded model's grammar ends the answer
        )
        return JudgeCall(
            request, slots, text_sha256(prompt), template_file=self.prompt_file, template_sha256=self.template_sha256
        )

    def verdict(self, text: str | None) -> JudgeParse:
        return parse_judge_reply(text)

    def row_scores(self, row: JudgedRow) -> dict[str, float]:
        """Mem0's evals.py scores str(response) against str(answer)."""
        from memorybench.score.lexical import (  # nltk: only when judging
            mem0_bleu1,
            mem0_f1,
        )

        prediction, gold = str(row.prediction), str(row.gold)
        return {"mem0_f1": mem0_f1(prediction, gold), "mem0_bleu1": mem0_bleu1(prediction, gold)}

    def prompt_info(self, stored_at: str) -> dict[str, Any]:
        return pinned_prompt_info("mem0 ACCURACY_PROMPT", self.pin, self.template_sha256, stored_at)


def pinned_prompt_info(name: str, pin: Pin, sha256: str, stored_at: str) -> dict[str, Any]:
    """What a judge's meta records of a pinned prompt: its name, the pin and where it comes
    from (repository, commit, file), its sha256 and where the pack stores it."""
    return {
        "name": name,
        "pin": pin.relpath,
        "sha256": sha256,
        "repository": pin.repository,
        "commit": pin.commit,
        "source_path": pin.source_path,
        "stored_at": stored_at,
    }


# -- our strict protocol ----------------------------------------------------------------------
#: the strict judge's template, relative to prompts/ (a changed text gets a new file name, v2)
STRICT_PROMPT = "judges/strict_v1.txt"
#: its sha256, pinned here as the Mem0 prompt's is in `memorybench.data.pins`: an edited file is refused
STRICT_PROMPT_SHA256 = "a660aa139027c2334fb7e0fa538688a97a95dc7c65693e4d2510fbe0db9d1538"


@JUDGES.register("strict")
class StrictJudge(Mem0Judge):
    """Our strict judge (`judge.protocol=strict`): Mem0's label contract (one user message, JSON
    mode, a ``label`` of CORRECT or WRONG read by Mem0's rules, CORRECT-only scoring, category 5
    skipped, Mem0's F1 and BLEU-1 beside it) with a prompt of ours, prompts/judges/strict_v1.txt,
    that requires the answer's specifics (entity, date, number, every listed item) to match the
    gold: an answer that only touches the topic is WRONG. Mem0's prompt stays the default."""

    name: ClassVar[str] = "strict"
    prompt_file: ClassVar[str] = "strict_v1.txt"

    @classmethod
    def load(cls, pins: str | os.PathLike[str] | None = None) -> StrictJudge:
        """The judge with our template (no pin needed), verified against `STRICT_PROMPT_SHA256`."""
        path = PROMPTS_DIR / STRICT_PROMPT
        try:
            template = path.read_bytes().decode("utf-8")
        except OSError as e:
            raise UserError(f"the strict judge's prompt {path} cannot be read ({e.strerror}); reinstall memorybench") from None
        actual = text_sha256(template)
        if actual != STRICT_PROMPT_SHA256:
            raise UserError(
                f"{path} has sha256 {actual}, expected {STRICT_PROMPT_SHA256}; restore it, or save a changed prompt "
                "as a new version (strict_v2.txt) with its own hash"
            )
        return cls(template)

    def prompt_info(self, stored_at: str) -> dict[str, Any]:
        return {
            "name": "memorybench strict judge v1",
            "path": f"prompts/{STRICT_PROMPT}",
            "sha256": self.template_sha256,
            "stored_at": stored_at,
        }
