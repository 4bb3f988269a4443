"""Prompt templates: versioned text files under prompts/ (and a plugin's prompts folder),
loaded with an exact set of `{slot}`s; the pinned third-party reader prompts
(`JINJA_READERS`: Mem0's answer prompts, rendered with jinja2 as Mem0 renders them, in
`PINNED_READERS`; a benchmark's own, `BenchmarkReaderTemplate`, which its package holds:
LoCoMo's question protocol, LongMemEval's and BEAM's prompts); and templates made from a
pinned prompt when used (`DERIVED_READERS`: `qa_mem0_v1`).

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
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional

from memorybench import PROMPTS_DIR
from memorybench.data.pins import (
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
    a `JINJA_READERS` name, or the made file of a `DERIVED_READERS` one or of a benchmark's
    own pinned reader, `pinned_reader`: LoCoMo's `locomo`); a one-line error listing the choices."""
    pinned = JINJA_READERS.get(relpath)
    if pinned is not None:
        return pin_path(pinned.pin)
    if relpath in DERIVED_READERS:
        return derived_prompt(relpath)
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


@dataclass(frozen=True)
class ChoiceReply:
    """A reply to a question posed as a choice, read as the protocol's authors read it."""

    #: the answer scored: the chosen option's text, or the reply as the protocol keeps it
    answer: str
    #: the option `answer` is; None: the reply was kept as it was
    choice: Optional[str]
    #: the reply was not one of the option letters the prompt asked for
    malformed: bool


class BenchmarkReaderTemplate(PinnedSlots):
    """A benchmark's own pinned reader prompt (its record's `reader_templates`): the reader sends
    `render(text(pins), slots)`, where the slots beyond `memory` and `question` are what
    `question_values` takes from the asked question (LongMemEval's `question_date`; LoCoMo's
    speakers and category), so the reader and `verify` build the same message from a trace's slots.

    A protocol that poses some questions as a choice (`poses_choice`: LoCoMo's category 5
    between its trap and "not mentioned") says which options a question is posed with
    (`options`), how a reply maps back to one (`read_reply`), and what of the posed question
    verify must find as the dataset's (`posed_finding`, `posed_question`)."""

    name: str
    extra_slots: tuple[str, ...]
    memories: tuple[str, ...] | None
    message_role: Literal["system", "user"]
    #: how a run under it poses its questions (`answer.prompt.question_protocol`); "open-ended":
    #: each asked as written. Two runs whose protocols differ answered different tasks.
    question_protocol: str = "open-ended"
    #: whether some questions are posed as a choice: the run then hands the answerer each such
    #: question's wrong option (`AskedChoice.adversarial_answer`, never the gold)
    poses_choice: bool = False
    #: what it is, in an error that refuses it ("LoCoMo's own question protocol"); None: "<title>'s reader prompt"
    about: str | None = None
    #: how a reply to a choice maps back to an option, in words ("LoCoMo's get_cat_5_answer")
    reply_rule: str | None = None

    def text(self, pins: str | os.PathLike[str] | None = None) -> str:
        raise NotImplementedError

    def system(self, pins: str | os.PathLike[str] | None = None) -> str | None:
        return None

    def render(self, text: str, slots: Mapping[str, str]) -> str:
        raise NotImplementedError

    def question_values(self, asked: Any, speakers: tuple[str, str] = ("", "")) -> dict[str, str]:
        """The `extra_slots` of an asked question (`data.records.AskedQuestion`) in a conversation
        between `speakers`; a one-line UserError where the question lacks one (a question of
        another benchmark)."""
        raise NotImplementedError

    def sizing_values(self, speakers: tuple[str, str] = ("", "")) -> dict[str, str]:
        """Typical `extra_slots` values, for sizing a prompt before any question (`plan --estimate`)."""
        raise NotImplementedError

    def options(self, asked: Any) -> dict[str, str] | None:
        """The options a question is posed with, by letter; None: asked as written."""
        return None

    def read_reply(self, reply: str, options: Mapping[str, str]) -> ChoiceReply:
        """A reply to a question posed with `options`, mapped back to one."""
        raise NotImplementedError(f"reader.prompt={self.name} poses no choice")

    def posed_question(self, values: Mapping[str, str | None]) -> str | None:
        """The question as a trace's prompt poses it (its own words in the message, no leak);
        None: the dataset's question text as written."""
        return None

    def posed_finding(self, question_id: str, values: Mapping[str, str | None], source: Any) -> tuple[str, str] | None:
        """Where a trace's slots do not pose the dataset's question (`source`) as the protocol
        poses it: (the finding's line, its key); None: they do."""
        return None


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


#: the `reader.prompt` values of memorybench's own pinned reader templates (rendered by them, not
#: filled); a benchmark's own (`pinned_reader`) come from its record
PINNED_READERS: dict[str, JinjaReaderTemplate] = dict(JINJA_READERS)


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
