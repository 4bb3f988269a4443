"""How many tokens a prompt will take, before any tokenizer is loaded: for sizing the
context window of the embedded local model (`n_ctx`) from a run's longest prompt.

One estimate serves the reader, the writer and the judge, so the three size their
local servers by the same rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

#: Characters per token assumed by `estimate_tokens`. Measured on LoCoMo (both tokenizers
#: agree within 3%): full_context memories 3.19-3.45 characters per token (dates, times
#: and names split finely), released session summaries 4.4-5.3.
CHARS_PER_TOKEN = 2.8
#: room for the chat format and the question around a prompt's memory and template
PROMPT_MARGIN_TOKENS = 64
#: how far a method's own memory bound may be exceeded once rendered for the reader
BOUND_SLACK = 1.5


def estimate_tokens(text: str) -> int:
    """A cheap, conservative (high) token count for `text` under either local model.

    ``len(text) / 2.8`` plus one token per 64 non-ASCII characters. On LoCoMo's
    full_context memories both tokenizers (Gemma 3's 262k vocabulary, SmolLM2's 49k one)
    give 3.2-3.45 characters per token, so this errs high by 14-23%; on summaries by
    ~70%. For an exact count use `memorybench.llm.local.count_tokens`.
    """
    non_ascii = sum(1 for ch in text if ord(ch) > 127)
    return math.ceil(len(text) / CHARS_PER_TOKEN) + non_ascii // 64 + 1


def longest_prompt_tokens(memory_texts: Iterable[str], template_chars: int, memory_tokens_bound: int | None = None) -> int:
    """The longest reader prompt of a run: its longest memory text known now (built up
    front), or the memory method's own upper bound for memory built later, plus the
    template and a margin."""
    overhead = math.ceil(template_chars / CHARS_PER_TOKEN) + PROMPT_MARGIN_TOKENS
    longest = max((estimate_tokens(text) for text in memory_texts), default=0)
    if memory_tokens_bound:
        longest = max(longest, int(memory_tokens_bound * BOUND_SLACK))
    return longest + overhead
