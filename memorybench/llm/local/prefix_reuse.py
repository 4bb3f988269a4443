"""Exact prefix reuse for llama-cpp-python's single KV slot (used in the server process).

llama-cpp-python keeps the previous request's tokens in its KV cache and evaluates only
what follows the longest common prefix, as one short batch. llama.cpp's CPU kernels take
another path for a handful of rows than for hundreds, so the logits then differ from a
fresh evaluation of the same prompt (up to ~1.5 on Gemma 3 270M with a 4k-token prompt)
and a greedy answer can flip: the answer to a question would depend on the question
asked before it, and a resumed run would differ from an uninterrupted one.

Here every prompt is evaluated in chunks whose boundaries depend on that prompt alone:

- every multiple of ``n_batch`` (as a fresh evaluation does anyway), and
- the start of the prompt's last paragraph (the token after its last blank line, searched
  in the last ``n_batch`` tokens): the question in a reader prompt, so that all the
  questions on one memory share every boundary before it.

A later prompt reuses the cache up to the largest boundary that both prompts share, that
lies within their common prefix and within the previous *prompt* (never its generated
tokens). Every chunk is then evaluated from the same cache with the same tokens as in a
fresh evaluation, so the answer is bitwise the same whatever was asked before, and the
cost over plain prefix reuse is only the last paragraph (the question: some 20 tokens).

The same rule makes a prefix's KV state reusable across processes: with a
`PrefillStore` (:mod:`memorybench.llm.local.prefill_store`), the state right after the cut
is written to disk, and a new server process restores the longest stored prefix that is one
of its prompt's boundaries at or below its own cut (only grid boundaries below it, as in
the stored state) instead of evaluating it.

`chunk_bounds`, `reusable_prefix` and `restorable_points` are pure; `install()` patches
``llama_cpp.Llama``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any


def chunk_bounds(n_tokens: int, n_batch: int, paragraph_start: int | None) -> list[int]:
    """Chunk boundaries strictly inside (0, n_tokens): the n_batch grid plus the cut."""
    bounds = set(range(n_batch, n_tokens, n_batch))
    if paragraph_start is not None and 0 < paragraph_start < n_tokens:
        bounds.add(paragraph_start)
    return sorted(bounds)


def reusable_prefix(previous: Sequence[int], current: Sequence[int], common: int, n_tokens: int) -> int:
    """The longest cached prefix whose chunks are exactly those of a fresh evaluation.

    `previous` and `current` are the two prompts' chunk boundaries, `common` the length of
    their common prefix (already limited to the previous prompt), `n_tokens` the length of
    the current prompt (at least one token must be left to evaluate).
    """
    best = 0
    prev_set = set(previous)
    for i, b in enumerate(current):
        if b > common or b >= n_tokens:
            break
        if b not in prev_set:
            break  # the previous prompt's chunks straddle b: nothing from here on is exact
        # the previous prompt must have no boundary of its own before b that we lack
        if bisect.bisect_left(previous, b) != i:
            break
        best = b
    return best


def restorable_points(bounds: Sequence[int], cut: int | None, n_tokens: int) -> list[int]:
    """Boundaries up to which a stored prefix state may start this prompt exactly: those at
    or below its cut (below it every boundary is on the n_batch grid, as in a stored state,
    which is always taken at a cut), leaving at least one token to evaluate."""
    if cut is None:
        return []
    return [b for b in bounds if b <= cut and b < n_tokens]


def paragraph_start(tokens: Sequence[int], piece: Callable[[int], bytes], window: int) -> int | None:
    """Index of the first token after the last blank line among the last `window` tokens."""
    n = len(tokens)
    following = b""
    for i in range(n - 1, max(-1, n - 1 - window), -1):
        text = piece(tokens[i])
        if b"\n\n" in text:
            start = i + 1
        elif text.endswith(b"\n") and following.startswith(b"\n"):
            start = i + 2  # the blank line spans tokens i and i + 1
        else:
            following = text
            continue
        return start if start < n else None
    return None


def install(store: Any = None) -> None:
    """Patch llama_cpp.Llama.generate/eval for exact prefix reuse (idempotent); with a
    `PrefillStore`, prefix states are also restored from and kept on disk."""
    import llama_cpp
    import numpy as np

    llama_cpp.Llama._memorybench_store = store  # type: ignore[attr-defined]
    if getattr(llama_cpp.Llama, "_memorybench_exact_reuse", False):
        return
    original_generate = llama_cpp.Llama.generate
    original_eval = llama_cpp.Llama.eval

    def piece_of(llama: Any) -> Callable[[int], bytes]:
        def piece(token: int) -> bytes:
            try:
                return bytes(llama.detokenize([token], special=True))
            except TypeError:
                return bytes(llama.detokenize([token]))

        return piece

    def generate(self: Any, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Any:
        tokens = [int(t) for t in tokens]
        cut = paragraph_start(tokens, piece_of(self), self.n_batch)
        bounds = chunk_bounds(len(tokens), self.n_batch, cut)
        reset = kwargs.get("reset", True)
        store = getattr(self, "_memorybench_store", None)
        self._memorybench_restored = 0
        self._memorybench_save_at = None
        keep = 0
        if reset and self.n_tokens > 0:
            previous = getattr(self, "_memorybench_bounds", None) or []
            limit = min(self.n_tokens, getattr(self, "_memorybench_prompt_tokens", 0), len(tokens))
            differ = np.flatnonzero(self.input_ids[:limit] != np.asarray(tokens[:limit], dtype=np.intc))
            common = int(differ[0]) if differ.size else limit
            keep = reusable_prefix(previous, bounds, common, len(tokens))
        if reset and store is not None:
            points = restorable_points(bounds, cut, len(tokens))
            restored = store.restore(self, tokens, [b for b in points if b > keep]) if points else 0
            if restored:
                self._memorybench_restored = keep = restored
            elif points and points[-1] == cut and keep < cut:
                self._memorybench_save_at = cut  # evaluated here: keep it for the next process
        if reset and self.n_tokens > 0 and not self._memorybench_restored:
            if keep <= 0:
                self.reset()
            elif keep < self.n_tokens:
                if self._ctx.kv_cache_seq_rm(-1, keep, -1):
                    self.n_tokens = keep
                else:
                    self.reset()
        self._memorybench_bounds = bounds
        self._memorybench_prompt_tokens = len(tokens)
        return original_generate(self, tokens, *args, **kwargs)

    def eval_(self: Any, tokens: Sequence[int]) -> None:
        bounds = getattr(self, "_memorybench_bounds", None)
        tokens = list(tokens)
        if not bounds:
            return original_eval(self, tokens)
        i = 0
        while i < len(tokens):
            pos = self.n_tokens
            j = bisect.bisect_right(bounds, pos)
            stop = bounds[j] if j < len(bounds) else (pos // self.n_batch + 1) * self.n_batch
            take = max(1, min(len(tokens) - i, stop - pos))
            original_eval(self, tokens[i : i + take])
            i += take
            save_at = getattr(self, "_memorybench_save_at", None)
            if save_at is not None and self.n_tokens >= save_at:
                self._memorybench_save_at = None
                store = getattr(self, "_memorybench_store", None)
                if store is not None and self.n_tokens == save_at:
                    store.save(self, [int(t) for t in self.input_ids[:save_at]])
        return None

    llama_cpp.Llama.generate = generate  # type: ignore[method-assign]
    llama_cpp.Llama.eval = eval_  # type: ignore[method-assign]
    llama_cpp.Llama._memorybench_exact_reuse = True  # type: ignore[attr-defined]
