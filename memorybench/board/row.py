"""One finished pack as the board shows it: its figures with their intervals, its contract, its costs.

`board_row(location, key)` reads a pack once (local or `gs://`, through `PackReader`) and keeps
only what the board needs: per judge the judge's figure (J: its mean over the kinds the
benchmark's judge scores) and, where the benchmark's own figure is lexical (LoCoMo F1), that
figure over the same kinds; each with its interval over the benchmark's unit
(`memorybench.compare.intervals.mean_interval`: a rate's for J, the cluster-robust t for F1) and
its per-unit sums (`Figure.by_unit`), from which the board pairs two packs on the units whose
questions agree without rereading either (`memorybench.board.tables.paired_from_units`). No
per-question row is kept: the run's questions are in its viewer page.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
from collections import Counter
from typing import TYPE_CHECKING, Any, Literal, Optional

import yaml

from memorybench.answer.prompt import question_protocol
from memorybench.benchmark import Benchmark, benchmark_of_pack
from memorybench.compare.conditions import answer_tokens
from memorybench.compare.gold_overlay import load_overlay
from memorybench.compare.intervals import mean_interval
from memorybench.compare.summary import _reader_model, cost_columns
from memorybench.errors import UserError
from memorybench.pack import layout
from memorybench.pack.judge_calibration import cache_dir_of, find_calibration
from memorybench.pack.reader import PackReader
from memorybench.records import Record
from memorybench.run_id import answerer_reads
from memorybench.score.rows import csv_text
from memorybench.score.score_record import covers
from memorybench.stats import nearest_rank

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["LEXICAL", "BoardRow", "Figure", "JudgeFigure", "board_row", "pack_key"]

#: the name of the benchmark's own lexical figure (LoCoMo's category F1) on the board
LEXICAL = "LoCoMo F1"


class Figure(Record):
    """One figure of one pack, with its interval over the benchmark's unit."""

    #: the figure's name as the benchmark gives it ("J", "LoCoMo F1")
    name: str
    #: "rate" (a judge's verdicts) or "score" (a lexical score): which interval it gets
    kind: Literal["rate", "score"]
    covers: str
    value: Optional[float] = None
    low: Optional[float] = None
    high: Optional[float] = None
    #: how the interval was made (with its unit count), or why there is none
    method: str = ""
    n: int = 0
    units: int = 0
    #: per unit (a conversation, a question): [sum of the scores, questions, 12 hex of the sha256
    #: of its sorted question ids]; two packs pair on the units whose digests agree
    by_unit: dict[str, tuple[float, int, str]] = {}


class JudgeFigure(Record):
    """A pack's figure under one judge, the judge named and calibrated."""

    judge_id: str
    #: the judge in words: protocol, model and the first hex of its prompt's sha256
    judge: str
    protocol: Optional[str] = None
    model: Optional[str] = None
    #: `memorybench judge-check`'s record in one line, or "not calibrated"
    calibration: str = "not calibrated"
    #: acceptance of known-wrong answers (specific, vague) and of the right ones; None: never checked
    specific_wrong_accepted: Optional[float] = None
    vague_wrong_accepted: Optional[float] = None
    gold_accepted: Optional[float] = None
    #: verdicts with no readable label
    failed: int = 0
    figure: Figure


class BoardRow(Record, schema="board_row.v1"):
    """One finished pack on the board."""

    #: sha256 (24 hex) of the pack's location and of its `_SUCCESS` files (the run's and each
    #: judge's): a pack that gains a judge, or moves, is a new row
    key: str
    uri: str
    run_id: str
    experiment: Optional[str] = None
    #: the system in words: an imported pack's experiment name and format, a run's memory and model
    system: str
    benchmark: str
    benchmark_title: str
    imported: bool = False
    questions: int = 0
    questions_total: Optional[int] = None
    answer_length_mean: Optional[float] = None
    answer_length_p95: Optional[float] = None
    #: the answerer's prompt tokens per question (None: not recorded, as in an imported file)
    context_tokens: Optional[float] = None
    cost_per_question_usd: Optional[float] = None
    latency_p50_s: Optional[float] = None
    latency_p95_s: Optional[float] = None
    #: questions among the figures' whose gold answer is known to be wrong (None: no audit applies)
    gold_wrong: Optional[int] = None
    #: the contract's fields that do not depend on the judge (`memorybench.board.contract.FIELDS`)
    contract: dict[str, str]
    #: the benchmark's own lexical figure over the judged kinds (LoCoMo F1), None where it has none
    lexical: Optional[Figure] = None
    judges: list[JudgeFigure] = []


def pack_key(pack: PackReader) -> str:
    """The row key of a pack: its location and the bytes of its `_SUCCESS` files, hashed."""
    digest = hashlib.sha256(pack.uri().encode("utf-8") + b"\0" + pack.read_bytes(layout.SUCCESS))
    for judge in pack.judges():
        digest.update(b"\0" + judge.encode("utf-8") + b"\0" + pack.read_bytes(pack.judge_path(judge, layout.SUCCESS)))
    return digest.hexdigest()[:24]


def _digest(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(ids)).encode("utf-8")).hexdigest()[:12]


def _figure(
    name: str, kind: str, per_question: dict[str, float], units: dict[str, str], bench: Benchmark, held: list[int]
) -> Figure:
    """A figure over `per_question` (question id -> score), its interval over the benchmark's unit."""
    ids = [q for q in per_question if q in units]
    if not ids:
        return Figure(name=name, kind=kind, covers="no questions", method="no question")  # type: ignore[arg-type]
    found = mean_interval([per_question[q] for q in ids], [units[q] for q in ids], unit=bench.unit, kind=kind)
    by_unit: dict[str, list[Any]] = {}
    for q in ids:
        cell = by_unit.setdefault(units[q], [0.0, 0, []])
        cell[0] += per_question[q]
        cell[1] += 1
        cell[2].append(q)
    return Figure(
        name=name,
        kind=kind,  # type: ignore[arg-type]
        covers=covers(bench, held, [k for k in bench.category_names if bench.judges(k)]),
        value=found.estimate,
        low=found.low,
        high=found.high,
        method=found.method if found.note is None else f"{found.method}: {found.note}",
        n=found.n,
        units=found.clusters,
        by_unit={u: (round(s, 9), c, _digest(qs)) for u, (s, c, qs) in sorted(by_unit.items())},
    )


def _config(pack: PackReader) -> dict[str, Any]:
    """The pack's resolved config, parsed once (libyaml's parser where PyYAML has it: the pure
    Python one took half of a pack's time)."""
    if not pack.exists(layout.CONFIG):
        return {}
    return yaml.load(pack.read_text(layout.CONFIG), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}


def _summary(meta: Any, metrics: Any, config: dict[str, Any]) -> dict[str, Any]:
    """What the board shows of `memorybench.compare.summary.run_summary`'s keys (the models that
    answered, the reader's model, the memory, cost per question, latency), made as it makes them
    from the records already read: run_summary reads and parses the config again for each."""
    reader = metrics.usage.get("reader") or {}
    latency = reader.get("latency_s") or {}
    answered = sorted(
        {a for m in meta.models if m.role == "reader" for a in m.answered} | set(reader.get("models_answered") or [])
    )
    unused = set(answerer_reads(config))  # a group the answerer does not read whole is no choice
    return {
        "models_answered": ",".join(answered) or None,
        "reader_model": _reader_model(meta),
        "memory": None if "memory" in unused else (meta.choices or {}).get("memory"),
        "cost_per_question_usd": cost_columns(metrics, [])["cost_per_question_usd"],
        "latency_p50_s": latency.get("p50"),
        "latency_p95_s": latency.get("p95"),
    }


@functools.cache
def _verdict_fields() -> pa.Schema:
    """The verdicts' fields the board reads (the rest of each line is not made into records)."""
    import pyarrow as pa

    return pa.schema([("question_id", pa.string()), ("status", pa.string()), ("score", pa.float64())])


def _system(meta: Any, summary: dict[str, Any], config: dict[str, Any]) -> str:
    """An imported pack by its experiment and format ("memobase (imported mem0_evals)"); a run by
    its memory and the model that answered ("full_context / gpt-4o-mini")."""
    answerer = config.get("answerer") or {}
    if answerer.get("name") == "imported":
        return f"{meta.name or meta.run_id} (imported {answerer.get('format') or 'file'})"
    model = summary.get("models_answered") or summary.get("reader_model") or answerer.get("model") or "unknown model"
    return f"{summary.get('memory') or 'unknown memory'} / {model}"


@functools.lru_cache(maxsize=8)
def _overlay(data_sha256: str | None) -> Any:
    return load_overlay([data_sha256])


def _judge_words(identity: dict[str, Any] | None) -> str:
    if not identity:
        return "no judge"
    sha = str(identity.get("prompt_sha256") or "")[:12]
    return f"{identity.get('protocol')} judge, model {identity.get('model')}, prompt {sha or 'unknown'}, t={identity.get('temperature')}"


def _judge_figure(
    pack: PackReader, judge_id: str, units: dict[str, str], bench: Benchmark, held: list[int], cache: str | None
) -> JudgeFigure:
    meta = pack.autorater_meta(judge_id)
    identity = meta.identity.model_dump(mode="json", by_alias=True) if meta is not None else None
    parsed: dict[str, list[float]] = {}
    failed = 0
    # three fields of each verdict, columnar (as `aggregate` reads packs): a sixth of the time of
    # validating every verdict as its record
    columns = pack.table(pack.judge_path(judge_id, layout.JUDGE_VERDICTS), _verdict_fields()).to_pydict()
    for question_id, status, score in zip(columns["question_id"], columns["status"], columns["score"]):
        if status in ("CORRECT", "WRONG") and score is not None:
            parsed.setdefault(question_id, []).append(score)
        elif status == "FAILED":
            failed += 1
    per_question = {q: sum(v) / len(v) for q, v in parsed.items()}
    found = find_calibration(identity, [cache] if cache else []) if identity else None
    accepted = dict(found.accepted or {}) if found is not None else {}
    right = found.right_set if found is not None else "gold"
    return JudgeFigure(
        judge_id=judge_id,
        judge=_judge_words(identity),
        protocol=(identity or {}).get("protocol"),
        model=(identity or {}).get("model"),
        calibration=found.summary() if found is not None else "not calibrated",
        specific_wrong_accepted=accepted.get("specific_wrong", getattr(found, "specific_wrong_accepted", None)),
        vague_wrong_accepted=accepted.get("vague_wrong", getattr(found, "vague_wrong_accepted", None)),
        gold_accepted=accepted.get(right, getattr(found, "gold_accepted", None)),
        failed=failed,
        figure=_figure(bench.judge_figure, "rate", per_question, units, bench, held),
    )


def _abstention(bench: Benchmark, held: list[int], ids: list[str], protocol: str) -> str:
    """Which kinds the judge does not score were asked, and how the questions were posed."""
    word = bench.kind_word
    never = [k for k in sorted(bench.category_names) if not bench.judges(k)]
    parts = []
    if never:
        asked = [k for k in never if k in held]
        parts.append(f"{word} {', '.join(map(str, never))} " + ("asked, not judged" if asked else "not asked"))
    flagged = Counter(m for q in ids for m in bench.marks(q))
    parts.extend(f"{n} {name} questions" for name, n in sorted(flagged.items()))
    parts.append(f"posed {protocol}")
    return "; ".join(parts)


def _retrieval(config: dict[str, Any]) -> str:
    memory = config.get("memory") or {}
    if memory.get("name") == "imported":
        return "unknown (imported)"
    top_k = memory.get("top_k")
    return f"top-k {top_k}" if top_k is not None else "no search (whole memory)"


def _answer_prompt(meta: Any, config: dict[str, Any], protocol: str) -> str:
    if protocol == "imported":
        return f"imported ({(config.get('answerer') or {}).get('format')})"
    reader = [f"{path} {sha[:12]}" for path, sha in sorted((meta.prompts or {}).items()) if not path.startswith("system")]
    return f"{protocol}: {', '.join(reader) or 'no template recorded'}"


def _csv_rows(text: str) -> list[dict[str, str | None]]:
    """predictions.csv's rows as `csv.DictReader` gives them (a short row's missing cells None),
    in about 0.6 of its time."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, [])
    return [dict(zip(header, row + [None] * (len(header) - len(row)))) for row in reader if row]  # type: ignore[operator]


def board_row(location: Any, key: str | None = None) -> BoardRow:
    """The board's row of one finished pack (a folder, a `gs://` URI or a reader)."""
    pack = PackReader.open(location)
    meta = pack.meta()
    metrics = pack.metrics()
    bench = benchmark_of_pack(meta, metrics)
    config = _config(pack)
    summary = _summary(meta, metrics, config)
    if not pack.exists(layout.PREDICTIONS_CSV):
        raise UserError(f"pack {pack.uri()} has no {layout.PREDICTIONS_CSV}; write it with `memorybench rescore {pack.uri()}`")
    # the scored rows as rescore and verify keep them (a formula-looking cell is kept as its text)
    rows = _csv_rows(pack.read_text(layout.PREDICTIONS_CSV))
    kind = {r["question_id"]: int(r["category"]) for r in rows}
    judged = {r["question_id"]: r["sample_id"] for r in rows if bench.judges(kind[r["question_id"]])}
    held = sorted(set(kind.values()))
    lengths = sorted(answer_tokens(csv_text(r["prediction"] or "")) for r in rows)
    protocol = question_protocol(config)
    lexical = None
    if bench.own_lexical_rules:
        f1 = {r["question_id"]: float(r["locomo_f1"]) for r in rows if r.get("locomo_f1") not in (None, "")}
        lexical = _figure(LEXICAL, "score", {q: f1[q] for q in judged if q in f1}, judged, bench, held)
    cache = cache_dir_of(config)
    judges = [_judge_figure(pack, j, judged, bench, held, cache) for j in pack.judges()]
    main = judges[0].figure if judges else lexical
    overlay = _overlay(meta.data.get("sha256"))
    wrong = len(overlay.wrong_gold(judged)) if overlay.errors is not None else None
    answer = metrics.usage.get("reader") or metrics.usage.get("agent") or {}
    prompt_tokens = answer.get("prompt_tokens")
    models = ",".join(sorted({a for m in meta.models if m.role in ("reader", "agent") for a in m.answered}))
    contract = {
        "dataset": f"{bench.name} {bench.version}; data {str(meta.data.get('sha256') or 'unknown')[:12]}",
        "answer_model": models or str(summary.get("reader_model") or f"unknown ({protocol})"),
        "answer_prompt": _answer_prompt(meta, config, protocol),
        "retrieval": _retrieval(config),
        "abstention": _abstention(bench, held, list(kind), protocol),
        "questions": f"{main.n if main else 0} questions, {main.covers if main else 'none'}"
        + (", a prefix" if meta.is_prefix else "")
        + (", a partial import" if getattr(meta, "partial", None) else ""),
        "gold_errors": "figures on all questions; known wrong gold counted"
        if overlay.errors is not None
        else "figures on all questions; no gold audit applies",
    }
    return BoardRow(
        key=key or pack_key(pack),
        uri=pack.uri(),
        run_id=meta.run_id or pack.name,
        experiment=meta.name,
        system=_system(meta, summary, config),
        benchmark=bench.name,
        benchmark_title=bench.title or bench.name,
        imported=protocol == "imported",
        questions=len(rows),
        questions_total=meta.questions_total,
        answer_length_mean=sum(lengths) / len(lengths) if lengths else None,
        answer_length_p95=nearest_rank(lengths, 0.95) if lengths else None,
        context_tokens=prompt_tokens / len(rows) if prompt_tokens and rows else None,
        cost_per_question_usd=summary.get("cost_per_question_usd"),
        latency_p50_s=summary.get("latency_p50_s"),
        latency_p95_s=summary.get("latency_p95_s"),
        gold_wrong=wrong,
        contract=contract,
        lexical=lexical,
        judges=judges,
    )
