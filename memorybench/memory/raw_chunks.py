"""`raw_chunks`: the full-context lines in chunks; the top_k chunks by BM25, in conversation order.

No model call. BM25 is bm25s's (Lucene variant, k1=1.5, b=0.75) over lowercased word
tokens (`\\w+`) without English stopwords, Porter-stemmed (NLTK); the question goes
through the same pipeline. Only chunks that share a term with the question score above
zero; the best top_k of those (ties: the earlier chunk) are handed to the reader in
conversation order, a blank line between chunks.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, ClassVar

from memorybench.data.records import AskedQuestion, Conversation
from memorybench.config import store_schema
from memorybench.memory._chunks import ChunksConfig, chunk_settings, make_chunks
from memorybench.memory._managed import Retrieved
from memorybench.memory.base import BuildContext, BuiltMemory
from memorybench.registry import MEMORY

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig

_WORD = re.compile(r"\w+")
JOINER = "\n\n"
BM25_PARAMS = {"method": "lucene", "k1": 1.5, "b": 0.75}


@functools.lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer().stem(word)


@functools.lru_cache(maxsize=1)
def _stemmer() -> Any:
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def bm25_tokens(text: str) -> list[str]:
    stop = _stopwords()
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in stop]


class Bm25Index:
    def __init__(self, texts: list[str]) -> None:
        import bm25s

        self.size = len(texts)
        self.retriever = bm25s.BM25(**BM25_PARAMS)
        if texts:
            self.retriever.index([bm25_tokens(t) for t in texts], show_progress=False)

    def ranked(self, query: str, k: int) -> list[tuple[int, float]]:
        """(chunk index, score) of the k best chunks with a positive score, best first."""
        tokens = bm25_tokens(query)
        if not tokens or not self.size:
            return []
        scores = self.retriever.get_scores(tokens)
        order = sorted((i for i in range(self.size) if scores[i] > 0), key=lambda i: (-float(scores[i]), i))
        return [(i, float(scores[i])) for i in order[:k]]


def bm25_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("bm25s")


store_schema("memory", "raw_chunks", ChunksConfig)


@MEMORY.register("raw_chunks")
class RawChunks:
    name: ClassVar[str]
    question_dependent: ClassVar[bool] = True
    software_only: ClassVar[bool] = True

    def __init__(self, cfg: DictConfig) -> None:
        self.chunk_tokens, self.overlap, self.top_k = chunk_settings(cfg)

    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        items = make_chunks(conversation, self.chunk_tokens, self.overlap)
        index = {
            "kind": "bm25",
            "library": f"bm25s {bm25_version()}",
            **BM25_PARAMS,
            "terms": "lowercased \\w+ words, bm25s English stopwords removed, NLTK Porter stems",
            "tokenizer": "cl100k_base (tiktoken)",
            "chunk_tokens": self.chunk_tokens,
            "chunk_overlap": self.overlap,
            "top_k": self.top_k,
            "chunks": len(items),
        }
        return BuiltMemory(conversation.sample_id, items, text=None, metadata={"index": index})

    def memory_tokens_bound(self, conversations: list[Conversation]) -> int:
        return self.top_k * (self.chunk_tokens + 2)

    def retrieve(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> Retrieved:
        index = built.runtime.get("bm25")
        if index is None:
            index = built.runtime["bm25"] = Bm25Index([i.text for i in built.items])
        ranked = index.ranked(asked.question, self.top_k)

        def render(keep: list[int]) -> str:
            chosen = sorted(ranked[n][0] for n in keep)  # conversation order
            return JOINER.join(built.items[i].text for i in chosen)

        return Retrieved(
            texts=[built.items[i].text for i, _ in ranked],
            hits=[{"item_id": built.items[i].item_id, "score": round(s, 6)} for i, s in ranked],
            render=render,
            extra={"joiner": JOINER},
        )

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        retrieved = self.retrieve(built, asked, ctx)
        return retrieved.render(list(range(len(retrieved.texts))))
