"""Prompt templates: versioned files under prompts/, with `{memory}` and `{question}` only.

Filling uses plain replacement (memory text may hold braces), and the template is
checked for unknown slots: there is no slot through which a gold answer could pass.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from memorybench import PROMPTS_DIR
from memorybench.errors import UserError

_SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
READER_SLOTS = frozenset({"memory", "question"})
SYSTEM_MESSAGE = "You answer questions using only the provided memory."


@dataclass(frozen=True)
class PromptTemplate:
    relpath: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @classmethod
    def load(cls, relpath: str, slots: frozenset[str] = READER_SLOTS) -> PromptTemplate:
        path = PROMPTS_DIR / relpath
        if not path.is_file():
            choices = sorted(str(p.relative_to(PROMPTS_DIR)) for p in PROMPTS_DIR.rglob("*.txt"))
            raise UserError(f"prompt template {relpath!r} not found under {PROMPTS_DIR}; choices: {', '.join(choices)}")
        text = path.read_text("utf-8")
        found = set(_SLOT.findall(text))
        if found != slots:
            raise UserError(
                f"prompt template {relpath} has slots {sorted(found)}, expected exactly {sorted(slots)}; fix the file"
            )
        return cls(relpath, text)

    def fill(self, memory: str, question: str) -> str:
        return fill_template(self.text, memory, question)


def fill_template(template: str, memory: str, question: str) -> str:
    """`{memory}` and `{question}` replaced in one pass: a memory that itself contains the
    text "{question}" is left as it is."""
    before, _, after = template.partition("{memory}")
    return before.replace("{question}", question) + memory + after.replace("{question}", question)


def content_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
