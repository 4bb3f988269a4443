"""Lines for run_meta.json `notes` that say what kind of memory a run used."""

from __future__ import annotations

from omegaconf import DictConfig

from memorybench.memory.base import _REGISTRY


def memory_notes(cfg: DictConfig) -> list[str]:
    name = str(cfg.memory.name)
    cls = _REGISTRY.get(name)
    notes = []
    clone_of = getattr(cls, "clone_of", None)
    if clone_of:
        notes.append(f"memory={name} is a local clone of {clone_of}; not the original implementation.")
    writes = bool(getattr(cls, "uses_writer", False)) or (name == "session_summaries" and cfg.memory.get("source") == "writer")
    if writes:
        writer = cfg.writer
        what = "The session summaries were" if name == "session_summaries" else "Memory was"
        notes.append(f"{what} written by writer={writer.name} (model {writer.get('model')}), not released with the data.")
        if writer.get("provider") == "local":
            notes.append("Memory written by the embedded local model: not comparable with published numbers.")
    if getattr(cls, "uses_embedder", False) and "embedder" in cfg:
        if cfg.embedder.get("provider") == "hashing":
            notes.append("embedder=hashing is a feature-hashing baseline, not a semantic embedder.")
    budget = cfg.get("budget")
    if budget is not None and budget.get("max_memory_tokens"):
        notes.append(f"Memory handed to the reader is capped at {budget.max_memory_tokens} cl100k_base tokens (budget.max_memory_tokens).")
    return notes
