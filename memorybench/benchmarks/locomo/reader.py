"""LoCoMo's own question protocol (`reader.prompt=locomo`), as its task_eval/gpt_utils.py poses a question.

At the data commit (`get_gpt_answers` with batch size 1; ../shared/pins/locomo/gpt_utils.py):
the conversation-start line with the two speakers' names, the context, a blank line, then
`QA_PROMPT` with the question, or for category 5 `QA_PROMPT_CAT_5` with a two-way choice
whose letter reply is mapped back to its option text (`get_cat_5_answer`). The three prompt
literals are pinned (`pins.PROMPT_PINS`, never committed); the short phrases around them are
LoCoMo's code, copied here.

Under this protocol a category-5 prompt poses the question's `adversarial_answer` as one of
two options: that trap, as posed, is the question's own text, not a leak (`posed_question`);
verify checks that the options are the dataset's in the order seeded from the question id
(`posed_finding`) and that each row's prediction is its reply mapped back (`read_reply`).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from memorybench.benchmarks.locomo.pins import CONV_START_PROMPT, QA_PROMPT, QA_PROMPT_CAT_5
from memorybench.data.pins import Pin, pin_path
from memorybench.errors import UserError
from memorybench.templates import BenchmarkReaderTemplate, ChoiceReply

__all__ = ["LOCOMO_READER", "NOT_MENTIONED", "READERS", "LocomoReaderTemplate", "cat5_answer", "options_of", "posed_question"]

#: appended to a category-2 question
CAT2_SUFFIX = " Use DATE of CONVERSATION to answer with an approximate date."
#: appended to a category-5 question, its two slots the options (a) and (b)
CAT5_CHOICE = " Select the correct answer: (a) {} (b) {}. "
#: the abstaining option of the category-5 choice
NOT_MENTIONED = "Not mentioned in the conversation"
#: between the context and the question prompt (`query_conv + '\n\n' + QA_PROMPT.format(...)`)
JOINER = "\n\n"
#: the pinned literals in the one prompt file a locomo pack holds (`prompts/locomo`), by LoCoMo's names
_LITERALS = {"CONV_START_PROMPT": CONV_START_PROMPT, "QA_PROMPT": QA_PROMPT, "QA_PROMPT_CAT_5": QA_PROMPT_CAT_5}
_CLEAN_REPLIES = frozenset({"a", "b", "(a)", "(b)"})


def options_of(question_id: str, adversarial_answer: str) -> dict[str, str]:
    """The category-5 options by letter, (a) first. LoCoMo draws `random.random() < 0.5` to put
    "Not mentioned in the conversation" first; here the same draw comes from a generator
    seeded with the question id, so a rerun (and `verify`) poses the same order."""
    if random.Random(question_id).random() < 0.5:
        return {"a": NOT_MENTIONED, "b": adversarial_answer}
    return {"a": adversarial_answer, "b": NOT_MENTIONED}


def posed_question(question: str, category: int | str, options: Mapping[str, str] | None = None) -> str:
    """The question as LoCoMo poses it: category 2 with its date suffix, category 5 with the choice."""
    if str(category) == "2":
        return question + CAT2_SUFFIX
    if str(category) == "5":
        if options is None:
            raise ValueError("a category-5 question under LoCoMo's protocol needs its two options")
        return question + CAT5_CHOICE.format(options["a"], options["b"])
    return question


def cat5_answer(reply: str, options: Mapping[str, str]) -> ChoiceReply:
    """LoCoMo's `get_cat_5_answer(reply, options)` followed by its `.strip()`, quirks kept: a
    one-character reply is (a) when it is "a", else (b); a three-character one is (a) when
    it is "(a)", else (b) ("yes" is (b)); any other reply is kept, stripped and lower-cased.
    A reply that is not a, b, (a) or (b) (any case) is `malformed`, mapped all the same."""
    text = reply.strip().lower()
    malformed = text not in _CLEAN_REPLIES
    if len(text) == 1:
        letter = "a" if "a" in text else "b"
    elif len(text) == 3:
        letter = "a" if "(a)" in text else "b"
    else:
        return ChoiceReply(text.strip(), None, malformed)
    return ChoiceReply(options[letter].strip(), letter, malformed)


@dataclass(frozen=True)
class LocomoReaderTemplate(BenchmarkReaderTemplate):
    """`reader.prompt=locomo`: LoCoMo's own question prompts, posed as its gpt_utils.py poses them.

    The pack's prompt file `locomo` holds the three pinned literals as a JSON object (keys
    CONV_START_PROMPT, QA_PROMPT, QA_PROMPT_CAT_5; values byte for byte the pinned files). A
    trace's slots: `memory`, `question` (the dataset's text), `speaker_1`, `speaker_2`,
    `category`, and for category 5 `option_a` and `option_b`; the message is the only one,
    a user message, as LoCoMo's `run_chatgpt` sends a gpt-4 prompt.
    """

    name: str = "locomo"
    system_pin: Pin | None = None
    memories: tuple[str, ...] | None = None
    extra_slots: tuple[str, ...] = ("speaker_1", "speaker_2", "category")
    choice_slots: tuple[str, ...] = ("option_a", "option_b")
    message_role: Literal["system", "user"] = "user"
    question_protocol: str = "locomo"
    poses_choice: bool = True
    about: str | None = "LoCoMo's own question protocol"
    reply_rule: str | None = "LoCoMo's get_cat_5_answer"

    def slot_names(self, values: Mapping[str, Any]) -> frozenset[str]:
        """The slots of a trace: the options too for a category-5 question."""
        return self.slots | set(self.choice_slots) if values.get("category") == "5" else self.slots

    def text(self, pins: str | os.PathLike[str] | None = None) -> str:
        literals = {key: pin_path(pin, pins).read_bytes().decode("utf-8") for key, pin in _LITERALS.items()}
        return json.dumps(literals, indent=2, ensure_ascii=False) + "\n"

    def values(
        self, question: str, category: int, speakers: tuple[str, str], options: Mapping[str, str] | None
    ) -> dict[str, str]:
        """The slot values of one question (options only for category 5)."""
        values = {"question": question, "speaker_1": speakers[0], "speaker_2": speakers[1], "category": str(category)}
        if str(category) == "5":
            assert options is not None
            values.update(option_a=options["a"], option_b=options["b"])
        return values

    def question_values(self, asked: Any, speakers: tuple[str, str] = ("", "")) -> dict[str, str]:
        values = self.values(asked.question, asked.category, speakers, self.options(asked))
        del values["question"]  # the trace's own slot, beside these
        return values

    def sizing_values(self, speakers: tuple[str, str] = ("", "")) -> dict[str, str]:
        """Sized as a category 1-4 question: no date suffix, no choice."""
        values = self.values("", 1, speakers, None)
        del values["question"]
        return values

    def options(self, asked: Any) -> dict[str, str] | None:
        """The two options of a category-5 question, (a) first; None for every other category."""
        if asked.category != 5:
            return None
        adversarial = getattr(asked, "adversarial_answer", None)
        if adversarial is None:
            raise UserError(
                f"{asked.question_id} is category 5 with no adversarial_answer: reader.prompt=locomo poses it as a choice"
                " against that answer; add it to the dataset row, or use reader.prompt=readers/qa_v1.txt"
            )
        return options_of(asked.question_id, adversarial)

    def read_reply(self, reply: str, options: Mapping[str, str]) -> ChoiceReply:
        return cat5_answer(reply, options)

    def posed_question(self, values: Mapping[str, str | None]) -> str | None:
        options = {"a": values.get("option_a") or "", "b": values.get("option_b") or ""}
        return posed_question(values.get("question") or "", values.get("category") or "", options)

    def posed_finding(self, question_id: str, values: Mapping[str, str | None], source: Any) -> tuple[str, str] | None:
        """The trace's category must be the dataset's, and for category 5 its options "Not
        mentioned in the conversation" and the question's `adversarial_answer`, in the order
        seeded from the question id."""
        if values.get("category") != str(source.category):
            return f"the category slot of {question_id} is not the dataset's category {source.category}", "category"
        if source.category != 5:
            return None
        posed = {"a": values.get("option_a"), "b": values.get("option_b")}
        if source.adversarial_answer is None or posed != options_of(question_id, source.adversarial_answer):
            return (
                f'the options of {question_id} are not "Not mentioned in the conversation" and its adversarial_answer '
                "in the order seeded from its id (reader.prompt=locomo)",
                "options",
            )
        return None

    def render(self, text: str, slots: Mapping[str, str]) -> str:
        """CONV_START_PROMPT with the speakers, the memory, a blank line, then QA_PROMPT (or
        QA_PROMPT_CAT_5) with the question as posed. A `text` that is not the JSON object of the
        three literals is a ValueError."""
        try:
            literals = json.loads(text)
            start, qa, qa5 = (str(literals[k]) for k in _LITERALS)
        except (ValueError, KeyError, TypeError):
            raise ValueError("not the JSON object of LoCoMo's three prompt literals") from None
        five = slots["category"] == "5"
        options = {"a": slots["option_a"], "b": slots["option_b"]} if five else None
        posed = posed_question(slots["question"], slots["category"], options)
        try:
            head = start.format(slots["speaker_1"], slots["speaker_2"])
            tail = (qa5 if five else qa).format(posed)
        except (IndexError, KeyError, ValueError):
            raise ValueError("a LoCoMo prompt literal with other slots than `{}`") from None
        return head + slots["memory"] + JOINER + tail


LOCOMO_READER = LocomoReaderTemplate()
#: the record's `reader_templates`: its pinned reader prompts by `reader.prompt` name
READERS: dict[str, LocomoReaderTemplate] = {LOCOMO_READER.name: LOCOMO_READER}
