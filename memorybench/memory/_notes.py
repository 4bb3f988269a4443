"""Lines for run_meta.json `notes` that say what kind of memory a run used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybench.registry import MEMORY

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig


def writes_memory(cls: type, cfg: DictConfig) -> bool:
    """Whether a writer model writes this run's memory (a method may decide from its config)."""
    decide = getattr(cls, "writes_memory", None)
    return bool(decide(cfg)) if decide is not None else bool(getattr(cls, "uses_writer", False))


def memory_notes(cfg: DictConfig) -> list[str]:
    name = str(cfg.memory.name)
    cls = MEMORY.get(name)
    notes = []
    clone_of = getattr(cls, "clone_of", None)
    if clone_of:
        notes.append(f"memory={name} is a local clone of {clone_of}; not the original implementation.")
    own = getattr(cls, "run_notes", None)
    notes += own(cfg) if own is not None else []
    from memorybench.memory._prefix import prefix_note

    notes += prefix_note(cfg.memory)
    if writes_memory(cls, cfg):
        writer = cfg.writer
        what = getattr(cls, "written_what", "Memory was")
        notes.append(f"{what} written by writer={writer.name} (model {writer.get('model')}), not released with the data.")
        if writer.get("provider") == "local":
            notes.append("Memory written by the embedded local model: not comparable with published numbers.")
    if getattr(cls, "uses_embedder", False) and "embedder" in cfg:
        if cfg.embedder.get("provider") == "hashing":
            notes.append("embedder=hashing is a feature-hashing baseline, not a semantic embedder.")
    budget = cfg.get("budget")
    if budget is not None and budget.get("max_memory_tokens"):
        notes.append(
            f"Memory handed to the reader is capped at {budget.max_memory_tokens} cl100k_base tokens (budget.max_memory_tokens)."
        )
    if budget is not None and budget.get("top_k") and getattr(cls, "retrieve", None) is not None:
        notes.append(
            f"Retrieval is held to budget.top_k={budget.top_k} items per question: the method is asked for that many "
            "(its memory.top_k set to it) and the reader gets at most that many, best first; memory/budget.json says "
            "whether the system kept to it."
        )
    elif budget is not None and budget.get("top_k"):
        notes.append(f"budget.top_k={budget.top_k} does not apply to memory={name}: it retrieves nothing per question.")
    return notes
