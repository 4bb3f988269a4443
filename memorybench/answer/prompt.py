"""The reader's prompt: a template with `{memory}` and `{question}` only, filled in one pass;
or a pinned Mem0 prompt (`reader.prompt=mem0_rag | mem0_answer | mem0_answer_graph`,
`memorybench.templates.JINJA_READERS`) that jinja2 renders as Mem0 does; or LoCoMo's own
question protocol (`reader.prompt=locomo`, `memorybench.benchmarks.locomo.reader`: category 5
posed as a two-way choice), or another benchmark's own prompt (`templates.BenchmarkReaderTemplate`). `reader.prompt=qa_mem0_v1` is a plain `{memory}`
template made from Mem0's ANSWER_PROMPT when used (`DERIVED_READERS`), so every answerer
can take it. `question_protocol` names how a run poses its questions.

Filling uses plain replacement (memory text may hold braces). REFERENCE_PIN.json of every
pack names `fill_template` here as the way to rebuild a reader's user message; a trace
with a `renderer` was rendered by that pinned template instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memorybench.errors import UserError
from memorybench.templates import JinjaReaderTemplate, PromptTemplate
from memorybench.templates import pinned_reader as _pinned_template

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


#: `question_protocol` values beside a benchmark's own (its reader template's
#: `question_protocol`: LoCoMo's "locomo", category 5 as a two-way choice, category 2 with its
#: date suffix): a question asked as written (every other reader prompt, an agent), or a peer's
#: released answers, posed as that peer posed them
QUESTION_PROTOCOLS = {
    "open-ended": "each question asked as written, category 5 included",
    "imported": "a peer's released answers, posed as that peer posed them",
}


def question_protocol(cfg: Any) -> str:
    """How a run posed its questions, from its config (a DictConfig, or a pack's
    config.resolved.yaml as a mapping): with the reader, its pinned template's own protocol
    ("locomo" for `reader.prompt=locomo`); "imported" for an imported pack; "open-ended" otherwise. Two runs whose protocols differ
    answered different tasks on category 5 (and category 2): compare them with that said."""
    answerer = _get(cfg, "answerer")
    name = _get(answerer, "name") if answerer is not None else None
    if name == "imported":
        return "imported"
    reader = _get(cfg, "reader")
    prompt = _get(reader, "prompt") if reader is not None else None
    if prompt is None or name not in (None, "reader"):
        return "open-ended"
    return getattr(_pinned_template(str(prompt)), "question_protocol", "open-ended")


def _get(node: Any, key: str) -> Any:
    return node.get(key) if isinstance(node, Mapping) or hasattr(node, "get") else None  # a DictConfig is no Mapping


def pinned_reader(cfg: Any) -> JinjaReaderTemplate | Any | None:
    """The pinned template `reader.prompt` names (memorybench's own or a benchmark's), or None
    for a template file under prompts/."""
    reader = cfg.get("reader")
    prompt = reader.get("prompt") if reader is not None else None
    return _pinned_template(str(prompt)) if prompt else None


def check_reader_template(cfg: Any) -> None:
    """A pinned reader template needs the one-call reader, and a memory whose text fills its
    slots: a one-line error before any model call."""
    pinned = pinned_reader(cfg)
    if pinned is None:
        return
    from memorybench.benchmark import benchmark_of, benchmarks

    dataset = str(cfg.dataset.name) if cfg.get("dataset") is not None else None
    bench = benchmark_of(dataset)
    owner = next((b for b in benchmarks().values() if pinned.name in b.reader_prompts), None)
    if owner is not None and owner is not bench:  # a prompt written for one benchmark's questions alone
        raise UserError(
            f"reader.prompt={pinned.name} is {owner.title}'s reader prompt, written for its questions alone; "
            f"dataset={dataset or bench.dataset_names[0]} is {bench.title}'s: use dataset="
            f"{'|'.join(owner.dataset_names)}, or reader.prompt=readers/qa_v1.txt"
        )
    answerer = str(cfg.answerer.name)
    if answerer != "reader":
        what = getattr(pinned, "about", None) or (f"{owner.title}'s reader prompt" if owner else "a pinned Mem0 prompt")
        raise UserError(
            f"reader.prompt={pinned.name} is {what} for answerer=reader; answerer={answerer} fills a"
            " {memory} template: set reader.prompt=readers/qa_v1.txt, or answerer=reader"
        )
    memory = str(cfg.memory.name)
    if pinned.memories is not None and memory not in pinned.memories:
        needs = " or ".join(f"memory={m}" for m in pinned.memories)
        raise UserError(
            f"reader.prompt={pinned.name} fills per-speaker memory slots that only {needs} provides, not memory={memory};"
            f" use {needs}, or reader.prompt=mem0_rag (the whole memory text as its CONTEXT)"
        )
