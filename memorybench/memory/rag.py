"""`rag`: the raw_chunks chunks, embedded; the top_k chunks by cosine similarity to the
question, best first, joined by a `<->` line (the shape of Mem0's RAG baseline).

The chunks are embedded once per conversation at build time (session text only); the
question is embedded at question time as the query and never stored in the index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from memorybench.hashing import sha256_bytes
from memorybench.data.records import AskedQuestion, Conversation
from memorybench.embed import rank
from memorybench.config import store_schema
from memorybench.memory._chunks import ChunksConfig, chunk_settings, make_chunks
from memorybench.memory._managed import Retrieved
from memorybench.memory.base import BuildContext, BuiltMemory
from memorybench.registry import MEMORY

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig

JOINER = "\n<->\n"


def item_vectors(built: BuiltMemory, ctx: BuildContext, key: str = "vectors") -> np.ndarray:
    """The items' vectors, embedded once per process (the embedder's cache serves a resume)."""
    vectors = built.runtime.get(key)
    if vectors is None:
        vectors = built.runtime[key] = ctx.embedder.embed([i.text for i in built.items])
    return vectors


def vectors_sha256(vectors: np.ndarray) -> str:
    return sha256_bytes(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())


store_schema("memory", "rag", ChunksConfig)


@MEMORY.register("rag")
class Rag:
    name: ClassVar[str]
    question_dependent: ClassVar[bool] = True
    software_only: ClassVar[bool] = False
    uses_embedder: ClassVar[bool] = True

    def __init__(self, cfg: DictConfig) -> None:
        self.chunk_tokens, self.overlap, self.top_k = chunk_settings(cfg)

    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        items = make_chunks(conversation, self.chunk_tokens, self.overlap)
        built = BuiltMemory(conversation.sample_id, items)
        vectors = item_vectors(built, ctx)
        built.metadata["index"] = {
            "kind": "dense",
            "similarity": "cosine (unit vectors, dot product)",
            "embedder": ctx.embedder.identity,
            "dimensions": int(vectors.shape[1]) if len(vectors) else None,
            "vectors_sha256": vectors_sha256(vectors),
            "tokenizer": "cl100k_base (tiktoken)",
            "chunk_tokens": self.chunk_tokens,
            "chunk_overlap": self.overlap,
            "top_k": self.top_k,
            "chunks": len(items),
        }
        return built

    def memory_tokens_bound(self, conversations: list[Conversation]) -> int:
        return self.top_k * (self.chunk_tokens + 3)

    def retrieve(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> Retrieved:
        vectors = item_vectors(built, ctx)
        query = ctx.embedder.embed([asked.question])[0]
        ranked = rank(vectors, query, self.top_k)

        def render(keep: list[int]) -> str:
            return JOINER.join(built.items[ranked[n][0]].text for n in keep)

        return Retrieved(
            texts=[built.items[i].text for i, _ in ranked],
            hits=[{"item_id": built.items[i].item_id, "score": round(s, 6)} for i, s in ranked],
            render=render,
            extra={"joiner": JOINER},
        )

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        retrieved = self.retrieve(built, asked, ctx)
        return retrieved.render(list(range(len(retrieved.texts))))
