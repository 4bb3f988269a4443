"""Prompt templates: versioned text files under prompts/ (and a plugin's prompts folder),
loaded with an exact set of `{slot}`s; the pinned third-party reader prompts
(`JINJA_READERS`: Mem0's answer prompts, rendered with jinja2 as Mem0 renders them;
`LOCOMO_READER`: LoCoMo's own question protocol; both in `PINNED_READERS`); and
templates made from a pinned prompt when used (`DERIVED_READERS`: `qa_mem0_v1`).

A template whose slots differ from what its user fills is refused when it is loaded, so
no slot can exist through which a gold answer could pass. Filling is the user's
business (the reader's one-pass fill is `memorybench.answer.prompt.fill_template`); a
pinned template renders itself (`JinjaReaderTemplate.render`), so that the reader and
`verify` build a message from the same slots the same way.
"""

from __future__ import annotations

import functools
import json
import os
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional

from memorybench import PROMPTS_DIR
from memorybench.data.pins import (
    LOCOMO_CONV_START_PROMPT,
    LOCOMO_QA_PROMPT,
    LOCOMO_QA_PROMPT_CAT_5,
    MEM0_ANSWER_PROMPT,
    MEM0_ANSWER_PROMPT_GRAPH,
    MEM0_RAG_PROMPT,
    MEM0_RAG_SYSTEM,
    Pin,
    pin_path,
)
from memorybench.errors import UserError
from memorybench.fs import write_atomic
from memorybench.hashing import sha256_text

_SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def prompt_dirs() -> list[Path]:
    """Where prompt files are looked up, in order: memorybench's prompts/, then each plugin's."""
    from memorybench.plugins import prompt_dirs as plugin_prompt_dirs

    return [PROMPTS_DIR, *plugin_prompt_dirs()]


def find_prompt(relpath: str) -> Path:
    """The file of a prompt named relative to a prompts folder (or the verified pinned file of
    a `JINJA_READERS` name, or the made file of a `DERIVED_READERS` one, of `locomo` or of a
    benchmark's own pinned reader, `pinned_reader`); a one-line error listing the choices."""
    pinned = JINJA_READERS.get(relpath)
    if pinned is not None:
        return pin_path(pinned.pin)
    if relpath in DERIVED_READERS:
        return derived_prompt(relpath)
    if relpath == LOCOMO_READER.name:
        return made_prompt(relpath, LOCOMO_READER.text())
    owned = pinned_reader(relpath)
    if owned is not None:  # a benchmark's own, taken out of its pinned files
        return made_prompt(relpath, owned.text())
    dirs = prompt_dirs()
    for folder in dirs:
        path = folder / relpath
        if path.is_file():
            return path
    choices = sorted({str(p.relative_to(d)) for d in dirs for p in d.rglob("*.txt")})
    choices += sorted({*pinned_reader_names(), *DERIVED_READERS})
    raise UserError(f"prompt template {relpath!r} not found under {PROMPTS_DIR}; choices: {', '.join(choices)}")


def slots_of(text: str) -> set[str]:
    return set(_SLOT.findall(text))


@dataclass(frozen=True)
class PromptTemplate:
    relpath: str
    text: str

    @property
    def sha256(self) -> str:
        return sha256_text(self.text)

    @classmethod
    def load(cls, relpath: str, slots: frozenset[str]) -> PromptTemplate:
        """The template at `relpath`, whose slots must be exactly `slots`."""
        text = find_prompt(relpath).read_text("utf-8")
        found = slots_of(text)
        if found != slots:
            raise UserError(
                f"prompt template {relpath} has slots {sorted(found)}, expected exactly {sorted(slots)}; fix the file"
            )
        return cls(relpath, text)


# -- pinned third-party reader prompts, rendered with jinja2 ---------------------------------
# Mem0's evaluation fills its answer prompts with `jinja2.Template(PROMPT).render(...)`. The
# pinned texts are rendered the same way (jinja2's defaults: one trailing newline dropped, no
# autoescape), from slot values a trace records: `memory` (the memory method's text),
# `question`, and for the per-speaker prompts `speaker_1` / `speaker_2`. What goes into each
# jinja2 variable is computed from those slots here, so the reader and `verify` build the
# same message from the same trace.


def mem0_context(memory: str) -> str:
    """Mem0's full-context CONTEXT ends every line with a newline (its `clean_chat_history`);
    our memory texts join lines with one, so the last line gets its newline here."""
    return memory if not memory or memory.endswith("\n") else memory + "\n"


def _blocks(memory: str) -> dict[str, str]:
    """The `HEADER:\\nlines` blocks of a mem0/mem0g memory text by header (blocks are joined by
    a blank line; memory lines are whitespace-normalized, so none holds a blank line)."""
    out: dict[str, str] = {}
    for block in memory.split("\n\n"):
        header, _, body = block.partition("\n")
        out.setdefault(header, body)
    return out


def mem0_speaker_memories(memory: str, speaker: str) -> list[str]:
    """Mem0's `{timestamp}: {memory}` lines of one speaker, best first: memory=mem0 renders a
    `Memories for SPEAKER:` block of `- TIME: TEXT` lines (`(none)` when it has none)."""
    body = _blocks(memory).get(f"Memories for {speaker}:", "")
    return [line[2:] for line in body.split("\n") if line.startswith("- ")]


def mem0_relations(memory: str) -> list[dict[str, str]]:
    """Mem0's graph memories (`{source, relationship, target}`) from memory=mem0g's `Relations:`
    block of `- SOURCE -- RELATION --> TARGET (DATE[; obsolete since DATE])` lines. Obsolete
    relations are left out: Mem0's graph search returns only the relations still valid."""
    out = []
    for line in _blocks(memory).get("Relations:", "").split("\n"):
        if not line.startswith("- "):
            continue
        relation, _, status = line[2:].rpartition(" (")
        if "; obsolete since " in status:
            continue
        source, _, rest = relation.partition(" -- ")
        relationship, _, target = rest.rpartition(" --> ")
        out.append({"source": source, "relationship": relationship, "target": target})
    return out


def _mem0_rag_variables(slots: Mapping[str, str]) -> dict[str, str]:
    return {"QUESTION": slots["question"], "CONTEXT": mem0_context(slots["memory"])}


def _mem0_answer_variables(slots: Mapping[str, str]) -> dict[str, str]:
    # as Mem0's memzero/search.py: json.dumps(..., indent=4) of each speaker's lines
    memory = slots["memory"]
    return {
        # Mem0's user ids are `{speaker}_{conversation index}`; its prompt names `user_id.split("_")[0]`
        "speaker_1_user_id": slots["speaker_1"].split("_")[0],
        "speaker_2_user_id": slots["speaker_2"].split("_")[0],
        "speaker_1_memories": json.dumps(mem0_speaker_memories(memory, slots["speaker_1"]), indent=4),
        "speaker_2_memories": json.dumps(mem0_speaker_memories(memory, slots["speaker_2"]), indent=4),
        "question": slots["question"],
    }


def _mem0_answer_graph_variables(slots: Mapping[str, str]) -> dict[str, str]:
    # memory=mem0g keeps one graph per conversation, not one per speaker as Mem0 does: both
    # speakers' relation slots get the relations retrieved for the question
    relations = json.dumps(mem0_relations(slots["memory"]), indent=4)
    return {**_mem0_answer_variables(slots), "speaker_1_graph_memories": relations, "speaker_2_graph_memories": relations}


class PinnedSlots:
    """The slots of a pinned reader prompt: `memory`, `question` and its `extra_slots`."""

    extra_slots: tuple[str, ...]

    @property
    def slots(self) -> frozenset[str]:
        return frozenset({"memory", "question", *self.extra_slots})

    def slot_names(self, values: Mapping[str, Any]) -> frozenset[str]:
        """The slots a trace of this template holds (the same for every question)."""
        return self.slots


class BenchmarkReaderTemplate(PinnedSlots):
    """A benchmark's own pinned reader prompt (its record's `reader_templates`): the reader sends
    `render(text(pins), slots)`, where the slots beyond `memory` and `question` are what
    `question_values` takes from the asked question (LongMemEval's `question_date`), so the
    reader and `verify` build the same message from a trace's slots."""

    name: str
    extra_slots: tuple[str, ...]
    memories: tuple[str, ...] | None
    message_role: Literal["system", "user"]

    def text(self, pins: str | os.PathLike[str] | None = None) -> str:
        raise NotImplementedError

    def system(self, pins: str | os.PathLike[str] | None = None) -> str | None:
        return None

    def render(self, text: str, slots: Mapping[str, str]) -> str:
        raise NotImplementedError

    def question_values(self, asked: Any) -> dict[str, str]:
        """The `extra_slots` of an asked question (`data.records.AskedQuestion`); a one-line
        UserError where the question lacks one (a question of another benchmark)."""
        raise NotImplementedError

    def sizing_values(self) -> dict[str, str]:
        """Typical `extra_slots` values, for sizing a prompt before any question (`plan --estimate`)."""
        raise NotImplementedError


@dataclass(frozen=True)
class JinjaReaderTemplate(PinnedSlots):
    """A pinned reader prompt (`reader.prompt=NAME`), rendered with jinja2 as its authors do."""

    name: str
    pin: Pin
    #: the system message sent before the filled prompt; None: the filled prompt is the
    #: only message, sent with role `system` (Mem0's search script sends it so)
    system_pin: Pin | None
    #: the memory methods whose text it takes apart into its slots; None: any memory
    memories: tuple[str, ...] | None
    #: the trace slots it needs besides `memory` and `question`
    extra_slots: tuple[str, ...]
    variables: Callable[[Mapping[str, str]], dict[str, str]]

    #: the role of the rendered message when there is no system message: Mem0's search script
    #: sends its prompt as the only, system, message
    message_role: Literal["system", "user"] = "system"

    def text(self, pins: str | os.PathLike[str] | None = None) -> str:
        return pin_path(self.pin, pins).read_bytes().decode("utf-8")

    def system(self, pins: str | os.PathLike[str] | None = None) -> str | None:
        return pin_path(self.system_pin, pins).read_bytes().decode("utf-8") if self.system_pin else None

    def render(self, text: str, slots: Mapping[str, str]) -> str:
        """The message: `text` rendered by jinja2 with the variables these slot values give."""
        return _compiled(text).render(**self.variables(slots))


@functools.lru_cache(maxsize=8)
def _compiled(text: str) -> Any:
    import jinja2  # imported only when a pinned template is rendered

    return jinja2.Template(text)


_SPEAKERS = ("speaker_1", "speaker_2")
#: `reader.prompt` values that name a pinned template instead of a file under prompts/
JINJA_READERS: dict[str, JinjaReaderTemplate] = {
    t.name: t
    for t in (
        JinjaReaderTemplate("mem0_rag", MEM0_RAG_PROMPT, MEM0_RAG_SYSTEM, None, (), _mem0_rag_variables),
        JinjaReaderTemplate("mem0_answer", MEM0_ANSWER_PROMPT, None, ("mem0",), _SPEAKERS, _mem0_answer_variables),
        JinjaReaderTemplate(
            "mem0_answer_graph", MEM0_ANSWER_PROMPT_GRAPH, None, ("mem0g",), _SPEAKERS, _mem0_answer_graph_variables
        ),
    )
}


# -- reader templates derived from a pinned prompt at run time ------------------------------


def _qa_mem0_v1(pins: str | os.PathLike[str] | None = None) -> str:
    """Mem0's ANSWER_PROMPT (its instructions, the 5-6 word line included) over one `{memory}`
    slot: the two per-speaker memory blocks become one `Memories:` block, `{{question}}`
    becomes `{question}`; every other byte is Mem0's."""
    text = pin_path(MEM0_ANSWER_PROMPT, pins).read_bytes().decode("utf-8")
    start = text.index("    Memories for user {{speaker_1_user_id}}:")
    end = text.index("{{speaker_2_memories}}") + len("{{speaker_2_memories}}")
    return text[:start] + "    Memories:\n\n    {memory}" + text[end:].replace("{{question}}", "{question}")


#: `reader.prompt` values that name a `{memory}`/`{question}` template built from a pinned
#: file when used: the pinned text may not be committed, so neither may what is made of it
DERIVED_READERS: dict[str, Callable[..., str]] = {"qa_mem0_v1": _qa_mem0_v1}


def derived_prompt(name: str, pins: str | os.PathLike[str] | None = None) -> Path:
    """The file of a DERIVED_READERS template, written once per content (named by its sha256)
    in the user cache, beside nothing that is committed; a pack records its sha256 as any prompt's."""
    return made_prompt(name, DERIVED_READERS[name](pins))


def made_prompt(name: str, text: str) -> Path:
    """`text` as a file of the user cache named by its sha256 (written once per content)."""
    import platformdirs

    folder = Path(platformdirs.user_cache_dir("memorybench")) / "derived"
    path = folder / f"{name}-{sha256_text(text)[:16]}.txt"
    if not path.is_file() or path.read_bytes() != text.encode("utf-8"):
        write_atomic(path, text)
    return path


# -- LoCoMo's own question protocol (`reader.prompt=locomo`) ---------------------------------
# As LoCoMo's task_eval/gpt_utils.py poses a question at the data commit (`get_gpt_answers`
# with batch size 1; ../shared/pins/locomo/gpt_utils.py): the conversation-start line with
# the two speakers' names, the context, a blank line, then `QA_PROMPT` with the question, or
# for category 5 `QA_PROMPT_CAT_5` with a two-way choice whose letter reply is mapped back
# to its option text (`get_cat_5_answer`). The three prompt literals are pinned (never
# committed); the short phrases around them are LoCoMo's code, copied here.

#: appended to a category-2 question
LOCOMO_CAT2_SUFFIX = " Use DATE of CONVERSATION to answer with an approximate date."
#: appended to a category-5 question, its two slots the options (a) and (b)
LOCOMO_CAT5_CHOICE = " Select the correct answer: (a) {} (b) {}. "
#: the abstaining option of the category-5 choice
LOCOMO_NOT_MENTIONED = "Not mentioned in the conversation"
#: between the context and the question prompt (`query_conv + '\n\n' + QA_PROMPT.format(...)`)
LOCOMO_JOINER = "\n\n"
#: the pinned literals in the one prompt file a locomo pack holds (`prompts/locomo`), by LoCoMo's names
_LOCOMO_LITERALS = {
    "CONV_START_PROMPT": LOCOMO_CONV_START_PROMPT,
    "QA_PROMPT": LOCOMO_QA_PROMPT,
    "QA_PROMPT_CAT_5": LOCOMO_QA_PROMPT_CAT_5,
}
_CLEAN_REPLIES = frozenset({"a", "b", "(a)", "(b)"})


def locomo_options(question_id: str, adversarial_answer: str) -> dict[str, str]:
    """The category-5 options by letter, (a) first. LoCoMo draws `random.random() < 0.5` to put
    "Not mentioned in the conversation" first; here the same draw comes from a generator
    seeded with the question id, so a rerun (and `verify`) poses the same order."""
    if random.Random(question_id).random() < 0.5:
        return {"a": LOCOMO_NOT_MENTIONED, "b": adversarial_answer}
    return {"a": adversarial_answer, "b": LOCOMO_NOT_MENTIONED}


def locomo_posed_question(question: str, category: int | str, options: Mapping[str, str] | None = None) -> str:
    """The question as LoCoMo poses it: category 2 with its date suffix, category 5 with the choice."""
    if str(category) == "2":
        return question + LOCOMO_CAT2_SUFFIX
    if str(category) == "5":
        if options is None:
            raise ValueError("a category-5 question under LoCoMo's protocol needs its two options")
        return question + LOCOMO_CAT5_CHOICE.format(options["a"], options["b"])
    return question


@dataclass(frozen=True)
class Cat5Answer:
    """A category-5 reply read as LoCoMo's `get_cat_5_answer` reads it, then stripped."""

    #: the answer scored: the chosen option's text, or the reply itself lower-cased
    answer: str
    #: the option `answer` is; None: the reply was kept (neither one nor three characters long)
    choice: Optional[Literal["a", "b"]]
    #: the reply was not a, b, (a) or (b) (any case): LoCoMo still maps a one- or
    #: three-character reply to (b) and keeps any other reply lower-cased
    malformed: bool


def locomo_cat5_answer(reply: str, options: Mapping[str, str]) -> Cat5Answer:
    """LoCoMo's `get_cat_5_answer(reply, options)` followed by its `.strip()`, quirks kept: a
    one-character reply is (a) when it is "a", else (b); a three-character one is (a) when
    it is "(a)", else (b) ("yes" is (b)); any other reply is kept, stripped and lower-cased."""
    text = reply.strip().lower()
    malformed = text not in _CLEAN_REPLIES
    if len(text) == 1:
        letter: Literal["a", "b"] = "a" if "a" in text else "b"
    elif len(text) == 3:
        letter = "a" if "(a)" in text else "b"
    else:
        return Cat5Answer(text.strip(), None, malformed)
    return Cat5Answer(options[letter].strip(), letter, malformed)


@dataclass(frozen=True)
class LocomoReaderTemplate(PinnedSlots):
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

    def slot_names(self, values: Mapping[str, Any]) -> frozenset[str]:
        """The slots of a trace: the options too for a category-5 question."""
        return self.slots | set(self.choice_slots) if values.get("category") == "5" else self.slots

    def text(self, pins: str | os.PathLike[str] | None = None) -> str:
        literals = {key: pin_path(pin, pins).read_bytes().decode("utf-8") for key, pin in _LOCOMO_LITERALS.items()}
        return json.dumps(literals, indent=2, ensure_ascii=False) + "\n"

    def system(self, pins: str | os.PathLike[str] | None = None) -> str | None:
        return None

    def values(
        self, question: str, category: int, speakers: tuple[str, str], options: Mapping[str, str] | None
    ) -> dict[str, str]:
        """The slot values of one question (options only for category 5)."""
        values = {"question": question, "speaker_1": speakers[0], "speaker_2": speakers[1], "category": str(category)}
        if str(category) == "5":
            assert options is not None
            values.update(option_a=options["a"], option_b=options["b"])
        return values

    def render(self, text: str, slots: Mapping[str, str]) -> str:
        """CONV_START_PROMPT with the speakers, the memory, a blank line, then QA_PROMPT (or
        QA_PROMPT_CAT_5) with the question as posed. A `text` that is not the JSON object of the
        three literals is a ValueError."""
        try:
            literals = json.loads(text)
            start, qa, qa5 = (str(literals[k]) for k in _LOCOMO_LITERALS)
        except (ValueError, KeyError, TypeError):
            raise ValueError("not the JSON object of LoCoMo's three prompt literals") from None
        five = slots["category"] == "5"
        options = {"a": slots["option_a"], "b": slots["option_b"]} if five else None
        posed = locomo_posed_question(slots["question"], slots["category"], options)
        try:
            head = start.format(slots["speaker_1"], slots["speaker_2"])
            tail = (qa5 if five else qa).format(posed)
        except (IndexError, KeyError, ValueError):
            raise ValueError("a LoCoMo prompt literal with other slots than `{}`") from None
        return head + slots["memory"] + LOCOMO_JOINER + tail


LOCOMO_READER = LocomoReaderTemplate()


#: the `reader.prompt` values of memorybench's own pinned reader templates (rendered by them, not
#: filled); a benchmark's own (`pinned_reader`) come from its record
PINNED_READERS: dict[str, JinjaReaderTemplate | LocomoReaderTemplate] = {
    **JINJA_READERS,
    LOCOMO_READER.name: LOCOMO_READER,
}


def _benchmark_readers() -> dict[str, Any]:
    """Every pinned reader template a benchmark owns, by name: its record's `reader_prompts`
    (names) found in the mapping its `reader_templates` names (imported on first use, so a
    command that asks for no such name imports no benchmark's code)."""
    from memorybench.benchmark import benchmarks, imported

    found: dict[str, Any] = {}
    for bench in benchmarks().values():
        if bench.reader_prompts and bench.reader_templates:
            table = imported(bench.reader_templates)
            found.update((name, table[name]) for name in bench.reader_prompts)
    return found


def pinned_reader(name: str | None) -> Any:
    """The pinned reader template `reader.prompt=name` names (memorybench's own, then a
    benchmark's), or None for a template file under prompts/."""
    if not name:
        return None
    own = PINNED_READERS.get(name)
    if own is not None:
        return own
    return _benchmark_readers().get(name) if not name.endswith(".txt") else None


def pinned_reader_names() -> list[str]:
    """Every pinned reader template's name: memorybench's own, then the benchmarks'."""
    return [*PINNED_READERS, *_benchmark_readers()]
