"""The reader's prompt: a template with `{memory}` and `{question}` only, filled in one pass.

Filling uses plain replacement (memory text may hold braces). REFERENCE_PIN.json of every
pack names `fill_template` here as the way to rebuild a reader's user message.
"""

from __future__ import annotations

from memorybench.templates import PromptTemplate

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
