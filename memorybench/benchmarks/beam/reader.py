"""BEAM's authors' answering prompt and settings as a reader option: `reader.prompt=beam_rag`
(`experiment=beam_authors` sets it with their settings; ours, `readers/qa_v1.txt`, stays the default).

The authors answer a probing question (src/answer_probing_questions/, pinned) in one of two ways:

- every retrieval method (`evaluation_type="rag"`: pair or turn chunks, key-value memory, LIGHT,
  under BM25, SPLADE, E5, dense or hybrid retrieval): long_term_memory_methods.py's
  `probing_question_evaluation` puts the retrieved context and the question into src/prompts.py's
  `answer_generation_for_rag` by `.replace("<context>", context).replace("<question>", query)` and
  sends it as one user message (`model.invoke(prompt)` with a string);
- `evaluation_type="long-context"`: the whole conversation replayed as chat messages (pruned from
  the front to the model's budget), then a user message "NOTE: Only provide the answer without any
  explanations. Question: ...". Our reader sends the memory as text, never as replayed turns, so
  this shape is not offered.

`beam_rag` is the first, around any memory method's text (the memory is the context). Its
template is the literal of the pinned src/prompts.py, its filling the `.replace` chain read out of
the pinned long_term_memory_methods.py (both parsed with `ast`, never imported: the files import
torch, langchain and the authors' model clients); `render` applies the chain, so a context that
holds the text `<question>` gets the question put into it, as the authors' code does. No system
message. Their settings (answer_generation.py's `__main__`): the reader is `BuildLLm(...,
temperature=0)`, langchain's ChatOpenAI with no max_tokens; memorybench bounds every answer, so
`experiment=beam_authors` sets `reader.max_tokens` to `READER_MAX_TOKENS`, far above the direct,
concise answer the prompt asks for (docs/beam.md).
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memorybench.benchmarks.beam.pins import ANSWER_GENERATION, LONG_TERM_MEMORY_METHODS
from memorybench.benchmarks.beam.prompts import _chain_of, _function, prompt_literal
from memorybench.data.pins import Pin, pin_path
from memorybench.errors import UserError
from memorybench.templates import BenchmarkReaderTemplate

__all__ = [
    "ANSWER_PROMPT",
    "READERS",
    "READER_MAX_TOKENS",
    "BeamReaderTemplate",
    "answer_chain",
    "reader_temperature",
]

#: the answer prompt of src/prompts.py the authors' retrieval methods fill
ANSWER_PROMPT = "answer_generation_for_rag"
#: how `probing_question_evaluation` fills it: (the literal replaced, its variable), in order;
#: `answer_chain` reads it from the pinned file and refuses a file that fills it otherwise
CHAIN = (("<context>", "context"), ("<question>", "query"))
#: our variable for each of theirs: the context is the memory's text
_OURS = {"context": "memory", "query": "question"}
#: the answer's bound in `experiment=beam_authors` (the authors send none)
READER_MAX_TOKENS = 2048


def answer_chain(pins: str | os.PathLike[str] | None = None) -> tuple[tuple[str, str], ...]:
    """The `.replace` chain by which the pinned `probing_question_evaluation` builds its answer
    prompt: `CHAIN`, or one line saying the pin is broken."""
    path = pin_path(LONG_TERM_MEMORY_METHODS, pins)
    chain = _chain_of(_function(path, LONG_TERM_MEMORY_METHODS, "probing_question_evaluation"), LONG_TERM_MEMORY_METHODS)
    if chain.template != ANSWER_PROMPT or chain.steps != CHAIN:
        raise UserError(
            f"{LONG_TERM_MEMORY_METHODS.url}: probing_question_evaluation fills {chain.template} by {chain.steps}, "
            f"not {ANSWER_PROMPT} by {CHAIN}; the pin is broken"
        )
    return chain.steps


def reader_temperature(pins: str | os.PathLike[str] | None = None) -> float:
    """The temperature answer_generation.py's `__main__` builds the reader with (`reader_llm_obj`)."""
    return _reader_temperature(pin_path(ANSWER_GENERATION, pins))


@functools.lru_cache(maxsize=None)
def _reader_temperature(path: Path) -> float:
    tree = ast.parse(path.read_bytes().decode("utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "reader_llm_obj"
            and isinstance(node.value, ast.Call)
        ):
            found = {k.arg: k.value for k in node.value.keywords}
            value = found.get("temperature")
            if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)):
                return float(value.value)
    raise UserError(f"{ANSWER_GENERATION.url}: no reader_llm_obj built with a literal temperature; the pin is broken")


@dataclass(frozen=True)
class BeamReaderTemplate(BenchmarkReaderTemplate):
    """`reader.prompt=beam_rag`: the authors' answer prompt around the memory, one user message."""

    name: str = "beam_rag"
    system_pin: Pin | None = None
    memories: tuple[str, ...] | None = None
    extra_slots: tuple[str, ...] = ()
    message_role: Literal["system", "user"] = "user"

    def text(self, pins: str | os.PathLike[str] | None = None) -> str:
        answer_chain(pins)  # the pinned code fills the prompt as `render` does, or one line
        return prompt_literal(ANSWER_PROMPT, pins)

    def system(self, pins: str | os.PathLike[str] | None = None) -> str | None:
        return None

    def render(self, text: str, slots: Mapping[str, str]) -> str:
        """`answer_generation_for_rag.replace("<context>", context).replace("<question>", query)`."""
        if any(old not in text for old, _ in CHAIN):
            raise ValueError("not BEAM's answer prompt (its <context> and <question> slots)")
        for old, name in CHAIN:
            text = text.replace(old, slots[_OURS[name]])
        return text

    def question_values(self, asked: Any, speakers: tuple[str, str] = ("", "")) -> dict[str, str]:
        return {}

    def sizing_values(self, speakers: tuple[str, str] = ("", "")) -> dict[str, str]:
        return {}


#: the record's `reader_templates`: its pinned reader prompts by `reader.prompt` name
READERS: dict[str, BeamReaderTemplate] = {t.name: t for t in (BeamReaderTemplate(),)}
