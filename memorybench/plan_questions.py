"""What `plan` says about a run's questions before any call: their kinds and their memory's size.

`memorybench plan --questions OVERRIDES` says which questions a run would ask (all, a
`max_questions` prefix, the listed `question_ids` or a seeded `question_sample`, with its
count of each kind) and lists each of them, in file order: its id, its kind (LoCoMo's
category, LongMemEval's type, with the abstention flag; BEAM's ability), the benchmark's own
columns (`Benchmark.question_columns`: BEAM's difficulty), and the size of its sample: sessions, turns, and the tokens of the whole haystack (the
memory `full_context` hands the reader; estimated high, `llm.sizing.estimate_tokens`).

`check_memory_fits` is what `plan` checks for every run on a benchmark whose haystacks can
outgrow the embedded model (LongMemEval: `_s` haystacks are about 115k tokens): with
`reader=local` and a memory that hands the reader the whole haystack, the longest one must
fit the largest local context, else one line says how many do not and the ways out,
before any call. Nothing is ever cut silently. LoCoMo's conversations fit Gemma's 32k
context by the exact count (`choose_local_model`): its dataset says so
(`Dataset.fits_local_reader`), and its runs skip this check, so `plan` stays as fast as before.
"""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import DictConfig

from memorybench.errors import UserError

#: memory methods whose memory is the whole sample, as the reader sees it
WHOLE_HAYSTACK = ("full_context",)
#: room for the reader's template, the question and the answer
_MARGIN_TOKENS = 512


@dataclass(frozen=True)
class QuestionRow:
    question_id: str
    kind: str
    abstention: bool
    sessions: int
    turns: int
    haystack_tokens: int
    #: the benchmark's own columns (`Benchmark.question_columns`: BEAM's difficulty), in order
    columns: tuple[tuple[str, str], ...] = ()


def _samples(cfg: DictConfig) -> tuple[list, dict[str, dict[str, str]]]:
    """The run's samples, and the benchmark's own columns of each question (none for most)."""
    from memorybench.benchmark import benchmark_of, imported
    from memorybench.data.source import load_dataset, resolve_dataset

    path, _ = resolve_dataset(cfg.dataset, cfg.paths.get("pins"))
    hook = benchmark_of(str(cfg.dataset.name)).question_columns
    return load_dataset(path, str(cfg.dataset.name)), (dict(imported(hook)(path)) if hook else {})


def question_rows(cfg: DictConfig) -> list[QuestionRow]:
    """One row per question of the run, in file order: all of them, the first `max_questions`,
    the listed `question_ids` or a seeded `question_sample` (memorybench.data.selection)."""
    return _rows(cfg)[0]


def _rows(cfg: DictConfig) -> tuple[list[QuestionRow], list, list]:
    """The run's rows, its questions, and every question of the dataset (file order)."""
    from memorybench.benchmark import benchmark_of
    from memorybench.data.selection import select_questions
    from memorybench.llm.sizing import estimate_tokens
    from memorybench.memory._context import session_text

    names = benchmark_of(str(cfg.dataset.name)).category_names
    rows, every = [], []
    samples, own = _samples(cfg)
    for sample in samples:
        tokens = estimate_tokens("\n".join(f"{s.date_time}\n{session_text(s)}" for s in sample.sessions))
        turns = sum(len(s.turns) for s in sample.sessions)
        for q in sample.questions:
            kind = f"{q.category} {names.get(q.category, '?')}"
            rows.append(
                QuestionRow(
                    q.question_id,
                    kind,
                    q.abstention,
                    len(sample.sessions),
                    turns,
                    tokens,
                    tuple(own.get(q.question_id, {}).items()),
                )
            )
            every.append(q)
    chosen = select_questions(every, cfg)
    asked = {q.question_id for q in chosen}
    return [r for r in rows if r.question_id in asked], chosen, every


def question_table(cfg: DictConfig) -> list[str]:
    """What `plan --questions` prints for one run: a line saying which questions it asks (of
    how many; for a selection, how chosen and how many of each kind), then `format_questions`."""
    from memorybench.benchmark import benchmark_of
    from memorybench.data.selection import selection_of

    rows, chosen, every = _rows(cfg)
    selection = selection_of(cfg)
    if selection is not None:
        names = benchmark_of(str(cfg.dataset.name)).category_names
        held: dict[int, list[int]] = {}
        for q in every:
            held.setdefault(q.category, [0, 0])[1] += 1
        for q in chosen:
            held[q.category][0] += 1
        kinds = ", ".join(f"{k} {names.get(k, '?')} {a}/{n}" for k, (a, n) in sorted(held.items()))
        head = f"questions: {len(chosen)} of {len(every)}, {selection.describe()}, in file order; by kind (asked/of): {kinds}"
    elif len(chosen) < len(every):
        head = f"questions: the first {len(chosen)} of {len(every)} in file order (max_questions={cfg.get('max_questions')})"
    else:
        head = f"questions: all {len(every)} in file order"
    return [head, *format_questions(rows)]


def format_questions(rows: list[QuestionRow]) -> list[str]:
    """A header and one tab-separated line per question; a benchmark's own columns (BEAM's
    difficulty) stand after the kind, where it has any."""
    names = list(dict.fromkeys(name for r in rows for name, _ in r.columns))
    own = "".join(f"\t{name}" for name in names)
    lines = [f"question_id\tkind{own}\tabstention\tsessions\tturns\thaystack_tokens"]
    for r in rows:
        values = dict(r.columns)
        cells = "".join(f"\t{values.get(name, '-')}" for name in names)
        lines.append(
            f"{r.question_id}\t{r.kind}{cells}\t{'yes' if r.abstention else 'no'}\t{r.sessions}\t{r.turns}\t{r.haystack_tokens}"
        )
    return lines


def check_memory_fits(cfg: DictConfig) -> None:
    """With the embedded reader and a whole-haystack memory on a dataset whose samples are not
    known to fit: every haystack of the run fits the local model's context, else one UserError line."""
    from memorybench.benchmark import dataset_named

    if dataset_named(str(cfg.dataset.name)).fits_local_reader or str(cfg.reader.get("provider")) != "local":
        return
    if str(cfg.memory.name) not in WHOLE_HAYSTACK or cfg.get("answerer", {}).get("name") not in (None, "reader"):
        return
    from memorybench.llm.local.models import LOCAL_MODELS, LocalModelError, choose_local_model

    rows = question_rows(cfg)
    requested = str(cfg.reader.get("model") or "auto")
    largest = (
        max(spec.max_context for spec in LOCAL_MODELS.values())
        if requested == "auto"
        else LOCAL_MODELS[requested].max_context
        if requested in LOCAL_MODELS
        else None
    )
    too_long = [r for r in rows if largest is not None and r.haystack_tokens + _MARGIN_TOKENS > largest]
    if not too_long:
        return
    try:  # the same choice qa makes, with its own numbers
        choose_local_model(max(r.haystack_tokens for r in rows) + _MARGIN_TOKENS, requested)
    except LocalModelError:
        pass
    longest = max(r.haystack_tokens for r in too_long)
    from memorybench.benchmark import benchmark_of

    smallest = benchmark_of(str(cfg.dataset.name)).datasets[0].name  # each benchmark lists its smallest first
    smaller = f", or dataset={smallest}" if smallest != str(cfg.dataset.name) else ""
    raise UserError(
        f"memory={cfg.memory.name} hands the reader whole haystacks: {len(too_long)} of {len(rows)} questions' haystacks "
        f"(the longest about {longest:,} tokens) do not fit the local reader's context ({largest:,} tokens); "
        "nothing is cut silently: choose memory=rag or raw_chunks, or a server reader (reader=openai or "
        f"openai_compatible){smaller}"
    )
