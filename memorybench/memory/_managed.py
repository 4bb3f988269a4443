"""What every memory method gets around it: budget, build cost, a stored build, resume.

`build_memory_method` wraps each method in `ManagedMethod`, which

- holds every method to one retrieval budget (`memorybench.pack.budget`): with
  `budget.top_k` set, the method is asked for that many (`build_memory_method` sets its
  `memory.top_k` for the run) and the reader gets at most `top_k` of its hits, best first;
  then `budget.max_memory_tokens` (cl100k_base tokens): a retrieval method ranks, and the
  wrapper keeps the best hits that fit; a text that is still too long keeps its first
  lines that fit. What the system returned, the budget and what it cut are recorded
  (manifest metadata, `memory/<method>/retrievals.jsonl` `memory_retrieval.v3`, with each
  search's seconds: the question's search latency, apart from the reader's answer), and
  once every question is answered, `memory/budget.json` (`write_budget`): whether the
  budget held;
- times each build and takes the writer's and embedder's usage during it: one row per
  conversation in `memory/build_cost.jsonl` (calls, tokens, seconds, dollars), apart
  from the reader's answer cost;
- saves what was built in `memory/<method>/<sample_id>.json` (items, text, state), and
  when the pack already commits a conversation's memory (its manifest row), loads it
  from there instead of building again: a resumed run pays for no writer call twice.
  Methods that qa.py builds up front by software alone (full_context, released
  summaries) are rebuilt instead: they write nothing and cost nothing;
- builds from the first `memory.max_sessions` sessions of each conversation when that is
  set (`_prefix.py`: one setting for every method, clone or wrapped library), and records
  the prefix in the built memory's metadata;
- stops the run (`check_writer_failures`, called by qa.py once a conversation's memory is
  committed and before any question over it) when more than `memory.max_failed_share`
  of the writer tasks failed (`_failures.py`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memorybench.data.records import AskedQuestion, Conversation
from memorybench.memory._failures import check_failed_share, failed_share_limit, writer_tally
from memorybench.memory._prefix import max_sessions, prefix_record, session_prefix
from memorybench.memory._records import BuildCost, RetrievalV3, StoredMemory
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.pack import layout
from memorybench.registry import MEMORY

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig


@dataclass
class Retrieved:
    """A question-dependent method's answer to one question, before the wrapper's cap."""

    #: the hits' texts, best first; the wrapper keeps the longest prefix within the budget
    texts: list[str]
    #: one dict per hit, best first: {item_id, score, ...}
    hits: list[dict[str, Any]]
    #: renders the kept hits (their indexes into `texts`) as the reader's memory
    render: Any
    extra: dict[str, Any] = field(default_factory=dict)


def budget_of(cfg: DictConfig, key: str = "max_memory_tokens") -> int | None:
    """`budget.<key>` of a run config (None: unset)."""
    budget = cfg.get("budget") if hasattr(cfg, "get") else None
    value = budget.get(key) if budget is not None and hasattr(budget, "get") else None
    return int(value) if value else None


def cap_text(text: str, max_tokens: int | None) -> tuple[str, bool]:
    """`text` cut to its first lines that fit in `max_tokens` (a first line longer than
    that is cut at a token boundary); (text, whether it was cut)."""
    from memorybench.memory._tokens import count_tokens, decode, encode

    if max_tokens is None or count_tokens(text) <= max_tokens:
        return text, False
    kept: list[str] = []
    used = 0
    for line in text.split("\n"):
        cost = count_tokens(line + "\n")
        if used + cost > max_tokens:
            break
        kept.append(line)
        used += cost
    if not kept:
        return decode(encode(text)[:max_tokens]), True
    return "\n".join(kept), True


def fits(texts: list[str], max_tokens: int | None, joiner: str) -> int:
    """How many of `texts` (best first) fit in `max_tokens` once joined by `joiner`."""
    from memorybench.memory._tokens import count_tokens

    if max_tokens is None:
        return len(texts)
    used, sep = 0, count_tokens(joiner) if joiner else 0
    for n, text in enumerate(texts):
        used += count_tokens(text) + (sep if n else 0)
        if used > max_tokens:
            return n
    return len(texts)


class ManagedMethod:
    """A memory method with budget, cost records, a stored build and resume (see module doc)."""

    def __init__(self, inner: Any, cfg: DictConfig) -> None:
        self.inner = inner
        self.cfg = cfg
        self.name: str = inner.name
        self.question_dependent: bool = inner.question_dependent
        self.software_only: bool = inner.software_only
        self.uses_writer: bool = bool(getattr(inner, "uses_writer", False))
        self.uses_embedder: bool = bool(getattr(inner, "uses_embedder", False))
        self.writer_templates: dict[str, frozenset[str]] = dict(getattr(inner, "writer_templates", {}) or {})
        self.max_memory_tokens = budget_of(cfg)
        #: the most retrieved items the reader gets, best first (None: the method's own top_k)
        self.top_k = budget_of(cfg, "top_k")
        #: the most writer tasks that may fail, as a share (None: the method has no writer bound)
        self.max_failed_share = failed_share_limit(cfg.memory)
        #: build from only the first N sessions of each conversation (None: all; `_prefix.py`)
        self.max_sessions = max_sessions(cfg.memory)
        #: "local clone of ...", for packs and tables (None for our own methods)
        self.clone_of: str | None = getattr(inner, "clone_of", None)

    @property
    def stores_build(self) -> bool:
        """False for the methods qa.py builds up front by software alone: rebuilt, never stored."""
        return not (self.software_only and not self.question_dependent)

    def memory_tokens_bound(self, conversations: list[Conversation]) -> int | None:
        """A high estimate of the cl100k_base tokens this method hands the reader for any
        question of `conversations` (None: unknown, or built up front so the caller can
        measure it), capped by the budget: for sizing a local reader's context."""
        bound = getattr(self.inner, "memory_tokens_bound", None)
        value = bound(conversations) if bound is not None else None
        if self.max_memory_tokens is not None:
            value = self.max_memory_tokens if value is None else min(value, self.max_memory_tokens)
        return value

    def store_path(self, sample_id: str) -> str:
        return f"memory/{self.name}/{sample_id}.json"

    # -- build -------------------------------------------------------------------------
    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        whole, conversation = conversation, session_prefix(conversation, self.max_sessions)
        sid = conversation.sample_id
        committed = {row["sample_id"] for row in ctx.pack.memory_manifest.rows()}
        if sid in committed:
            if not self.stores_build:
                return self._cap_built(self.inner.build(conversation, ctx))
            stored = ctx.pack.path(self.store_path(sid))
            if stored.is_file():
                return self._load(stored)
        writer_before = ctx.writer.usage.copy() if ctx.writer is not None else None
        embed_before = ctx.embedder.usage.copy() if ctx.embedder is not None else None
        started = time.perf_counter()
        built = self.inner.build(conversation, ctx)
        seconds = time.perf_counter() - started
        built = self._cap_built(built)
        writer = ctx.writer.usage.since(writer_before) if writer_before is not None else None
        bounds = getattr(ctx.writer, "json_bounds", None)
        if writer is not None and bounds:  # writer.json_schema: what each task's grammar allowed, its longest reply
            writer["json_bounds"] = {role: dict(b) for role, b in sorted(bounds.items())}
        embedder = ctx.embedder.usage.since(embed_before) if embed_before is not None else None
        costs = [part["cost_usd"] for part in (writer, embedder) if part is not None]
        cost = None if any(c is None for c in costs) else round(sum(costs), 10)
        memory_tokens = built.metadata.get("memory_tokens") if built.text is not None else None
        built.metadata.update(self._labels(ctx))
        if self.max_sessions is not None:
            built.metadata["prefix"] = prefix_record(self.max_sessions, conversation, whole)
        if built.text is None and self.max_memory_tokens is not None:
            built.metadata["budget"] = {
                "max_memory_tokens": self.max_memory_tokens,
                "applied": f"per question: memory/{self.name}/retrievals.jsonl",
            }
        ctx.pack.journal(layout.BUILD_COST).append(
            BuildCost(
                sample_id=sid,
                method=self.name,
                latency_s=round(seconds, 6),
                writer=writer,
                embedder=embedder,
                cost_usd=cost,
                item_count=len(built.items),
                memory_tokens=memory_tokens,
            )
        )
        if self.stores_build:
            ctx.pack.write_json(
                self.store_path(sid),
                StoredMemory(
                    sample_id=sid,
                    method=self.name,
                    items=[_item_json(i) for i in built.items],
                    text=built.text,
                    metadata=built.metadata,
                    state=built.state,
                ),
            )
        return built

    def check_writer_failures(self, pack: Any) -> None:
        """Stop (UserError) when more than `memory.max_failed_share` of the writer tasks of the
        conversations committed so far failed; their memory stays in the pack."""
        if not self.uses_writer or self.max_failed_share is None:
            return
        tally = writer_tally(pack.journal(layout.BUILD_COST).rows())
        check_failed_share(tally, self.max_failed_share, method=self.name, failures_file=str(pack.root / layout.WRITER_FAILURES))

    def _labels(self, ctx: BuildContext) -> dict[str, Any]:
        labels: dict[str, Any] = {}
        if self.clone_of:
            labels["implementation"] = f"local clone of {self.clone_of}"
        if ctx.writer is not None:
            identity = ctx.writer.model_identity
            labels["writer"] = {"provider": identity.provider, "model": identity.requested, "local": identity.local}
        if ctx.embedder is not None:
            labels["embedder"] = {"name": ctx.embedder.name, "key": ctx.embedder.key, "semantic": ctx.embedder.semantic}
        return labels

    def _cap_built(self, built: BuiltMemory) -> BuiltMemory:
        if built.text is None:
            return built
        from memorybench.memory._tokens import count_tokens

        before = count_tokens(built.text)
        text, cut = cap_text(built.text, self.max_memory_tokens)
        built.text = text
        built.metadata["memory_tokens"] = count_tokens(text) if cut else before
        if self.max_memory_tokens is not None:
            built.metadata["budget"] = {"max_memory_tokens": self.max_memory_tokens, "tokens_before_cap": before, "cut": cut}
        return built

    @staticmethod
    def _load(path: Any) -> BuiltMemory:
        stored = StoredMemory.model_validate_json(path.read_text("utf-8"))
        items = [MemoryItem(i["item_id"], i["text"], tuple(i["sources"])) for i in stored.items]
        return BuiltMemory(stored.sample_id, items, text=stored.text, metadata=stored.metadata, state=stored.state)

    # -- questions ---------------------------------------------------------------------
    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        retrieve = getattr(self.inner, "retrieve", None)
        if retrieve is None:
            text = self.inner.for_question(built, asked, ctx)
            return cap_text(text, self.max_memory_tokens)[0] if self.question_dependent else text
        from memorybench.memory._tokens import count_tokens, encoding

        encoding()  # loaded once, before the clock: the first question's search does not pay for it
        embed_before = ctx.embedder.usage.copy() if ctx.embedder is not None else None
        started = time.perf_counter()
        retrieved: Retrieved = retrieve(built, asked, ctx)
        query = ctx.embedder.usage.since(embed_before) if embed_before is not None else None
        if query is not None:
            query.pop("latency_s")  # the search's own time is the row's latency_s
        returned = len(retrieved.texts)
        allowed = returned if self.top_k is None else min(self.top_k, returned)  # best first
        keep = fits(retrieved.texts[:allowed], self.max_memory_tokens, retrieved.extra.pop("joiner", "\n"))
        text = retrieved.render(list(range(keep)))
        while self.max_memory_tokens is not None and keep > 0 and count_tokens(text) > self.max_memory_tokens:
            keep -= 1  # the rendering's headers did not fit: one hit fewer
            text = retrieved.render(list(range(keep)))
        text, cut = cap_text(text, self.max_memory_tokens)
        seconds = time.perf_counter() - started

        ctx.pack.journal(layout.retrievals(self.name)).append(
            RetrievalV3(
                question_id=asked.question_id,
                sample_id=asked.sample_id,
                method=self.name,
                hits=retrieved.hits[:keep],
                memory_tokens=count_tokens(text),
                dropped_by_budget=returned - keep,
                cut_by_budget=cut,
                query_embedding=query,
                extra=retrieved.extra,
                latency_s=round(seconds, 6),
                returned=returned,
                top_k=self.top_k,
                memory_items=len(built.items),
            )
        )
        return text

    # -- the run's account -------------------------------------------------------------
    def write_budget(self, pack: Any) -> None:
        """`memory/budget.json` (`memorybench.pack.budget.BudgetSummary`), computed from the
        pack's own rows once every question is answered, when the run set a budget."""
        if self.top_k is None and self.max_memory_tokens is None:
            return
        from memorybench.pack.budget import compute_budget
        from memorybench.pack.reader import PackReader

        pack.write_json(layout.MEMORY_BUDGET, compute_budget(PackReader.open(pack.root)))


def _item_json(item: MemoryItem) -> dict[str, Any]:
    return {"item_id": item.item_id, "text": item.text, "sources": list(item.sources)}


def build_memory_method(cfg: DictConfig) -> ManagedMethod:
    """The method registered as `cfg.memory.name`, built from the whole run config and
    wrapped (`ManagedMethod`): the budget cap, build cost records, the stored build and
    resume; an unknown name is a one-line error naming the choices. With `budget.top_k`
    set, the method is built from a copy of the config whose `memory.top_k` is that budget
    (a method without the key keeps its own limits, and the wrapper cuts its hits)."""
    return ManagedMethod(MEMORY.get(str(cfg.memory.name))(budgeted_config(cfg)), cfg)


def budgeted_config(cfg: DictConfig) -> DictConfig:
    """`cfg`, or a copy whose `memory.top_k` is `budget.top_k` (where both are there): every
    method asked for the same number of items. A per-speaker method (mem0, LangMem) asks
    that many per speaker, its protocol; the wrapper hands the reader the first `top_k`
    and the budget summary flags it."""
    budget = cfg.get("budget") if hasattr(cfg, "get") else None
    value = budget.get("top_k") if budget is not None and hasattr(budget, "get") else None
    if value is None:
        return cfg
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        from memorybench.errors import UserError

        raise UserError(f"budget.top_k={value} must be a whole number of at least 1 (null: each method's own memory.top_k)")
    memory = cfg.get("memory")
    if memory is None or "top_k" not in memory or memory.get("top_k") == value:
        return cfg
    import copy

    from omegaconf import read_write

    out = copy.deepcopy(cfg)
    with read_write(out):
        out.memory.top_k = value
    return out


def memory_names() -> list[str]:
    return MEMORY.names()
