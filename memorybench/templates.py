"""Prompt templates: versioned text files under prompts/ (and a plugin's prompts folder),
loaded with an exact set of `{slot}`s.

A template whose slots differ from what its user fills is refused when it is loaded, so
no slot can exist through which a gold answer could pass. Filling is the user's
business (the reader's one-pass fill is `memorybench.answer.prompt.fill_template`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memorybench import PROMPTS_DIR
from memorybench.errors import UserError
from memorybench.hashing import sha256_text

_SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def prompt_dirs() -> list[Path]:
    """Where prompt files are looked up, in order: memorybench's prompts/, then each plugin's."""
    from memorybench.plugins import prompt_dirs as plugin_prompt_dirs

    return [PROMPTS_DIR, *plugin_prompt_dirs()]


def find_prompt(relpath: str) -> Path:
    """The file of a prompt named relative to a prompts folder; a one-line error listing the choices."""
    dirs = prompt_dirs()
    for folder in dirs:
        path = folder / relpath
        if path.is_file():
            return path
    choices = sorted({str(p.relative_to(d)) for d in dirs for p in d.rglob("*.txt")})
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
