"""The reader's prompt: a template with `{memory}` and `{question}` only, filled in one pass;
or a pinned Mem0 prompt (`reader.prompt=mem0_rag | mem0_answer | mem0_answer_graph`,
`memorybench.templates.JINJA_READERS`) that jinja2 renders as Mem0 does.
`reader.prompt=qa_mem0_v1` is a plain `{memory}` template made from Mem0's ANSWER_PROMPT
when used (`DERIVED_READERS`), so every answerer can take it.

Filling uses plain replacement (memory text may hold braces). REFERENCE_PIN.json of every
pack names `fill_template` here as the way to rebuild a reader's user message; a trace
with a `renderer` was rendered by that pinned template instead.
"""

from __future__ import annotations

from typing import Any

from memorybench.errors import UserError
from memorybench.templates import JINJA_READERS, JinjaReaderTemplate, PromptTemplate

READER_SLOTS = frozenset({"memory", "question"})
SYSTEM_MESSAGE = "You answer questions using only the provided memory."


def reader_template(relpath: str) -> PromptTemplate:
    """The reader template at `relpath` (under prompts/), with exactly the reader's two slots."""
    return PromptTemplate.load(relpath, READER_SLOTS)


def fill_template(template: str, memory: str, question: str) -> str:
    """`{memory}` and `{question}` replaced in one pass: a memory that itself contains the
    text "{question}" is left as it is."""
    before, _, after = template.partition("{memory}")
    return before.replace("{question}", question) + memory + after.replace("{question}", question)


def jinja_reader(cfg: Any) -> JinjaReaderTemplate | None:
    """The pinned template `reader.prompt` names, or None for a template file under prompts/."""
    reader = cfg.get("reader")
    prompt = reader.get("prompt") if reader is not None else None
    return JINJA_READERS.get(str(prompt)) if prompt else None


def check_reader_template(cfg: Any) -> None:
    """A pinned reader template needs the one-call reader, and a memory whose text fills its
    slots: a one-line error before any model call."""
    pinned = jinja_reader(cfg)
    if pinned is None:
        return
    answerer = str(cfg.answerer.name)
    if answerer != "reader":
        raise UserError(
            f"reader.prompt={pinned.name} is a pinned Mem0 prompt for answerer=reader; answerer={answerer} fills a"
            " {memory} template: set reader.prompt=readers/qa_v1.txt, or answerer=reader"
        )
    memory = str(cfg.memory.name)
    if pinned.memories is not None and memory not in pinned.memories:
        needs = " or ".join(f"memory={m}" for m in pinned.memories)
        raise UserError(
            f"reader.prompt={pinned.name} fills per-speaker memory slots that only {needs} provides, not memory={memory};"
            f" use {needs}, or reader.prompt=mem0_rag (the whole memory text as its CONTEXT)"
        )
