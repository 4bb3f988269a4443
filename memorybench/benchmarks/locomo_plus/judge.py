"""LoCoMo-Plus's judge (`judge=locomo_plus`): the authors' per-category templates, sent as
their `llm_as_judge.py` sends them, read as it reads the reply.

- The template of a row is `PROMPT_TEMPLATES[category name]` of the pinned `prompt.py`
  (parsed, never imported; `templates`), its names the authors' (LoCoMo's 3 is
  "common-sense", 6 is "Cognitive"). `get_judge_prompt` fills it with
  `template.format(gold=..., pred=..., evidence=...)`: the gold is the row's answer where it
  has one that Python reads as true (an int stays an int, 0 and the adversarial rows' none
  become ""), the Cognitive rows have none; the evidence is LoCoMo's evidence turns as
  `unified_input.py` writes them (`SPEAKER：TEXT`, a full-width colon; `[Dn:k] [Missing turn]`,
  `[...] [Parse error]`), or the cue of a Cognitive row.
- `call_model(prompt)` without a category prepends `CONV_START_PROMPT.format("A", "B")` to
  the stripped message (utils.py `_prepend_conv_prefix`): one user message, gpt-4o-mini,
  temperature 0, max_tokens 512 (the script's defaults), no response format.
- The reply: `_parse_judge_response` (the JSON's label and reason by a regular expression,
  else `json.loads`, else the first of correct / wrong / partial found in the text), then
  correct 1, partial 0.5, wrong 0. A reply in which none is found is a judge failure here,
  counted and shown (the authors score it 0).

Every row is judged (the six categories), so the figure is the mean score per category and
over all rows: `llm_as_judge.py`'s `_compute_summary` (its `avg`s), failures aside.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from memorybench.benchmarks.locomo_plus import BENCHMARK
from memorybench.benchmarks.locomo_plus.pins import PROMPT
from memorybench.data.pins import Pin, pin_path
from memorybench.errors import UserError
from memorybench.hashing import sha256_text
from memorybench.llm.records import ChatRequest
from memorybench.score.judge import JudgeCall, JudgeParse, pinned_prompt_info

__all__ = ["LABEL_TO_SCORE", "LocomoPlusJudge", "LocomoPlusParse", "evidence_text", "parse_judge_response", "templates"]

LABEL_TO_SCORE = {"correct": 1.0, "partial": 0.5, "wrong": 0.0}
#: llm_as_judge.py's defaults (`--model`, `--temperature`, `--max-tokens`)
JUDGE_MODEL, JUDGE_TEMPERATURE, JUDGE_MAX_TOKENS = "gpt-4o-mini", 0.0, 512
SLOTS = ("gold", "pred", "evidence")
_LABEL_REASON = re.compile(r'\{[^{}]*"label"\s*:\s*["\']([^"\']+)["\'][^{}]*"reason"\s*:\s*["\']([^"\']*)["\']', re.DOTALL)


def templates(pins: str | os.PathLike[str] | None = None) -> tuple[dict[str, str], str]:
    """({category name or "default": template}, CONV_START_PROMPT) of the pinned prompt.py, as
    Python reads its literals (the file is verified against its sha256 first)."""
    tree = ast.parse(pin_path(PROMPT, pins).read_text("utf-8"))
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    table, start = found.get("PROMPT_TEMPLATES"), found.get("CONV_START_PROMPT")
    if not isinstance(table, dict) or not isinstance(start, str):
        raise UserError(f"{PROMPT.relpath} has no PROMPT_TEMPLATES or CONV_START_PROMPT at the pinned commit; the pin is broken")
    return {str(k): str(v) for k, v in table.items()}, start


def parse_judge_response(raw: str | None) -> tuple[str, str]:
    """(label, reason) as llm_as_judge.py's `_parse_judge_response` reads a reply."""
    label, reason = "", ""
    raw = (raw or "").strip()
    try:
        found = _LABEL_REASON.search(raw)
        if found:
            label, reason = found.group(1).strip(), (found.group(2) or "").strip()
        else:
            obj = json.loads(raw)
            label = (obj.get("label") or "").strip()
            reason = (obj.get("reason") or "").strip()
    except Exception:  # noqa: BLE001 - the authors' own catch-all, kept
        lowered = raw.lower()
        if "correct" in lowered:
            label = "correct"
        elif "wrong" in lowered:
            label = "wrong"
        elif "partial" in lowered:
            label = "partial"
        reason = raw[:200] if raw else ""
    return label, reason


def evidence_text(conversation: Mapping[str, Any], evidence: Any) -> str:
    """LoCoMo evidence ids as unified_input.py's `_evidence_to_text` writes them for the judge."""
    raw = [evidence] if isinstance(evidence, str) else list(evidence or [])
    ids = [part.strip() for item in raw for part in str(item).split(";") if part.strip()]
    lines = []
    for evid in ids:
        try:
            session_id, turn_id = evid.split(":")
            turns = conversation.get(f"session_{int(session_id.replace('D', ''))}", [])
            turn_index = int(turn_id)
            if 0 <= turn_index - 1 < len(turns):
                turn = turns[turn_index - 1]
                lines.append(f"{turn.get('speaker', 'Unknown')}\uff1a{turn.get('text', '')}")
            else:
                lines.append(f"[{evid}] [Missing turn]")
        except Exception:  # noqa: BLE001 - the authors' own catch-all, kept
            lines.append(f"[{evid}] [Parse error]")
    return "\n".join(lines)


@dataclass(frozen=True)
class LocomoPlusParse(JudgeParse):
    """A reply read by the authors' rule: `label` as they extract it (None: none found)."""

    @property
    def score(self) -> float | int | None:  # type: ignore[override]
        if self.label is None:
            return None
        value = LABEL_TO_SCORE.get(self.label.strip().lower(), 0.0)
        return int(value) if value in (0.0, 1.0) else value

    @property
    def standard(self) -> bool | None:
        return None if self.label is None else self.label in LABEL_TO_SCORE

    @property
    def status(self) -> str:
        if self.label is None:
            return "FAILED"
        return "CORRECT" if self.score == 1 else "WRONG"


class LocomoPlusJudge:
    """LoCoMo-Plus's judge: the pinned per-category templates behind the authors' conversation
    prefix, one user message, labels correct / partial / wrong scored 1 / 0.5 / 0."""

    name: ClassVar[str] = "locomo_plus"
    pin: ClassVar[Pin] = PROMPT
    benchmark: ClassVar[str] = BENCHMARK.name
    published: ClassVar[str] = "the LoCoMo-Plus authors' published figures"
    response_format: ClassVar[dict[str, str] | None] = None
    request_settings: ClassVar[dict[str, Any]] = {"temperature": JUDGE_TEMPERATURE, "max_tokens": JUDGE_MAX_TOKENS}
    judged_categories: ClassVar[tuple[int, ...]] = tuple(sorted(BENCHMARK.category_names))
    published_model: ClassVar[str] = JUDGE_MODEL
    #: what its figures mean (autorater_metrics.json `labels`)
    labels: ClassVar[dict[str, str]] = {
        "j": (
            "LoCoMo-Plus's judge score: mean of correct 1 / partial 0.5 / wrong 0 over the judged rows of all six "
            "categories (failures excluded and counted; the authors' llm_as_judge.py scores them 0), per category its "
            "`avg`; with several passes, the mean of the per-pass figures and their sample standard deviation (n-1)"
        ),
        "j.agreement": "share of rows judged in every pass whose passes all gave the same score",
        "mem0_f1": "Mem0's lexical F1 (token sets), a diagnostic here: mean over every judged row",
        "mem0_bleu1": "Mem0's BLEU-1 (NLTK, smoothing method1), a diagnostic here: mean over every judged row",
    }

    def __init__(self, table: Mapping[str, str], conv_start: str, pins: str | os.PathLike[str] | None = None) -> None:
        missing = [n for n in BENCHMARK.category_names.values() if n not in table]
        if missing:
            raise UserError(f"LoCoMo-Plus's prompt.py has no template for {', '.join(missing)}; the pin is broken")
        self.pins = pins
        prefix = conv_start.format("A", "B")
        #: file name under prompts/ -> what a message is filled from: the prefix call_model puts before the
        #: stripped message, then the template stripped (no field stands at either end of any template, so
        #: stripping before filling is stripping after: tests/benchmarks/test_locomo_plus_judge.py)
        self.templates = {self.file_of(n): prefix + table[n].strip() for n in BENCHMARK.category_names.values()}
        self.template_sha256 = sha256_text("\n".join(f"{k}\n{v}" for k, v in sorted(self.templates.items())))

    @classmethod
    def load(cls, pins: str | os.PathLike[str] | None = None) -> LocomoPlusJudge:
        table, start = templates(pins)
        return cls(table, start, pins)

    @staticmethod
    def file_of(category_name: str) -> str:
        return f"locomo_plus_{category_name.lower().replace('-', '_')}.txt"

    @classmethod
    def template_file(cls, row: Any) -> str:
        return cls.file_of(cls.category_name(row))

    @staticmethod
    def category_name(row: Any) -> str:
        try:
            return BENCHMARK.category_names[int(row.category)]
        except (KeyError, TypeError, ValueError):
            raise UserError(
                f"a LoCoMo-Plus row has category {row.category!r}, which names none of its six "
                "categories; is this pack LoCoMo-Plus's?"
            ) from None

    def skips(self, row: Any) -> bool:
        return False

    @classmethod
    def slots(cls, row: Any, pins: str | os.PathLike[str] | None = None) -> dict[str, str]:
        """The template's fields as `str.format` prints them: the gold where Python reads it as
        true (the Cognitive rows have none: their stored gold is the cue, their evidence), the
        prediction, and the evidence (a LoCoMo row's turns from the pinned locomo10.json)."""
        cognitive = int(row.category) == 6
        gold = "" if cognitive or not row.gold else row.gold
        evidence = str(row.gold or "") if cognitive else _evidence_of(str(row.question_id), pins)
        return {"gold": f"{gold}", "pred": str(row.prediction or ""), "evidence": evidence}

    @staticmethod
    def fill(template: str, slots: Mapping[str, str]) -> str:
        """The message from a stored template and its slots: `str.format` by name (get_judge_prompt)."""
        return template.format(**slots)

    def prompt_text(self, row: Any) -> str:
        """The one user message of a row."""
        return self.fill(self.templates[self.template_file(row)], self.slots(row, self.pins))

    def request(self, row: Any, *, model: str, sampling: Mapping[str, Any]) -> JudgeCall:
        name = self.template_file(row)
        slots = self.slots(row, self.pins)
        prompt = self.fill(self.templates[name], slots)
        seed = sampling.get("seed")
        request = ChatRequest(
            model=model,
            messages=({"role": "user", "content": prompt},),
            temperature=float(sampling["temperature"]),
            max_tokens=int(sampling["max_tokens"]),
            seed=None if seed is None else int(seed),
        )
        return JudgeCall(
            request, slots, sha256_text(prompt), template_file=name, template_sha256=sha256_text(self.templates[name])
        )

    def verdict(self, text: str | None) -> JudgeParse:
        label, _ = parse_judge_response(text)
        if not label:
            return LocomoPlusParse(None, "no correct, partial or wrong label in the reply")
        return LocomoPlusParse(label)

    def row_scores(self, row: Any) -> dict[str, float]:
        return {}

    def prompt_info(self, stored_at: str) -> dict[str, Any]:
        return {
            **pinned_prompt_info("LoCoMo-Plus PROMPT_TEMPLATES", self.pin, self.template_sha256, stored_at),
            "files": {name: sha256_text(text) for name, text in self.templates.items()},
        }


_EVIDENCE: dict[str, dict[str, str]] = {}


def _evidence_of(question_id: str, pins: str | os.PathLike[str] | None) -> str:
    """A LoCoMo question's evidence turns, from the pinned locomo10.json as the authors read it."""
    from memorybench.benchmarks.locomo.pins import LOCOMO10
    from memorybench.data.pins import pins_dir

    key = str(pins_dir(pins))
    if key not in _EVIDENCE:
        raw = json.loads(pin_path(LOCOMO10, pins).read_text("utf-8"))
        _EVIDENCE[key] = {
            f"{s['sample_id']}-q-{i}": evidence_text(s["conversation"], qa.get("evidence"))
            for s in raw
            for i, qa in enumerate(s["qa"])
        }
    found = _EVIDENCE[key].get(question_id)
    if found is None:
        raise UserError(f"question {question_id!r} is not in the pinned locomo10.json; is this pack LoCoMo-Plus's?")
    return found
