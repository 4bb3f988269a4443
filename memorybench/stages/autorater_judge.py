"""The judge the `autorater` stage runs: its config, protocol, identity and one call.

A composed `judge` node (conf/judge/*.yaml, `judge.KEY=...` overrides) names a registered
judge protocol (`judge.protocol`, default `mem0`; `memorybench.registry.JUDGES`). The protocol
may fix request settings of its own (`request_settings`: LongMemEval's judge sends
temperature 0 and max_tokens 10, as evaluate_qa.py does): they are set over the composed
config before the judge's identity, settings and requests are made from it, so what is
recorded is what is sent, and a config value they replace is named in a note. A protocol
judges one benchmark's packs (`benchmark`): another benchmark's pack is refused, since its
categories would be read as the wrong kinds (Mem0's judge skips category 5, which is
LongMemEval's temporal-reasoning type).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from memorybench.benchmark import DEFAULT, Benchmark, benchmark_named, benchmark_of_pack
from memorybench.errors import ModelCallError, UserError
from memorybench.hashing import sha256_text
from memorybench.llm.endpoints import validate_endpoint
from memorybench.pack import layout
from memorybench.pack.autorater_schemas import AutoraterVerdict, JudgeIdentity, JudgeRequest, JudgeTrace
from memorybench.pack.reader import PackReader
from memorybench.pack.schemas import Prediction
from memorybench.registry import JUDGES
from memorybench.run_id import OPERATIONAL_KEYS, resolved_model
from memorybench.score.judge import DEFAULT_PROTOCOL, JudgeProtocol

__all__ = [
    "IDENTITY_KEYS",
    "WHERE_KEYS",
    "check_benchmark",
    "configured_judge",
    "judge_id_of",
    "judge_identity",
    "judge_protocol",
    "judge_settings",
    "pack_benchmark",
    "templates_stored_at",
]

#: config keys that say where a judge is served, not who it is
WHERE_KEYS = frozenset({"name", "provider", "base_url"})
#: config keys that are the identity's own fields
IDENTITY_KEYS = frozenset({"protocol", "model", "temperature"})


def _judge_container(cfg_judge: DictConfig | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(cfg_judge, DictConfig):
        try:
            data = OmegaConf.to_container(cfg_judge, resolve=True, throw_on_missing=True)
        except MissingMandatoryValue as e:
            key = f"judge.{e.key}" if getattr(e, "key", None) else "a judge key"
            raise UserError(f"missing value for {key}; add `{key}=...`") from None
    else:
        data = dict(cfg_judge)
    assert isinstance(data, dict)
    return data


def _protocol_name(judge: Mapping[str, Any]) -> str:
    return str(judge.get("protocol") or DEFAULT_PROTOCOL)


def judge_protocol(judge: Mapping[str, Any], pins: str | os.PathLike[str] | None = None) -> JudgeProtocol:
    """The registered judge protocol the config names (`judge.protocol`, default mem0), loaded."""
    return JUDGES.get(_protocol_name(judge)).load(pins)


def configured_judge(
    cfg_judge: DictConfig | Mapping[str, Any], pins: str | os.PathLike[str] | None = None
) -> tuple[dict[str, Any], JudgeProtocol, list[str]]:
    """The judge config as a dict with the protocol's own request settings set over it, the
    loaded protocol, and one note per config value those settings replaced."""
    judge_cfg = _judge_container(cfg_judge)
    protocol = judge_protocol(judge_cfg, pins)
    notes = []
    for key, value in getattr(protocol, "request_settings", {}).items():
        if judge_cfg.get(key) != value:
            notes.append(
                f"judge.{key}={judge_cfg.get(key)!r} of the config was replaced by {value!r}: the "
                f"{_protocol_name(judge_cfg)} protocol sends its authors' {key}."
            )
            judge_cfg[key] = value
    return judge_cfg, protocol, notes


def judge_identity(judge: Mapping[str, Any], protocol: JudgeProtocol) -> JudgeIdentity:
    """Who the configured judge is (`JudgeIdentity`): its folder is `autorater/<identity.judge_id>/`."""
    response_format = protocol.response_format
    return JudgeIdentity(
        protocol=_protocol_name(judge),
        # the model it runs where that is known before the run (provider=local: `auto` or a
        # null model as the pinned model it picks, as the reader's run id does), else as named
        model=str(resolved_model(judge) or judge.get("model") or "auto"),
        prompt_sha256=protocol.template_sha256,
        temperature=float(judge["temperature"]),
        response_format=None if response_format is None else dict(response_format),
    )


def judge_settings(judge: Mapping[str, Any]) -> dict[str, Any]:
    """What else shapes the judge's requests: the config less the identity's fields, where it
    is served and operational settings (max_tokens, seed, ... remain)."""
    skip = OPERATIONAL_KEYS | WHERE_KEYS | IDENTITY_KEYS
    return {k: v for k, v in judge.items() if k not in skip}


def _validate_judge(node: DictConfig, passes: int) -> None:
    if passes < 1:
        raise UserError(f"--passes {passes} must be at least 1")
    validate_endpoint("judge", node)  # the same checks as the reader's
    if node.get("cache") and passes > 1:
        raise UserError(
            f"judge.cache=true with --passes {passes} would replay pass 1 from the response cache; "
            "drop judge.cache=true (or use --passes 1)"
        )


def judge_id_of(cfg_judge: DictConfig | Mapping[str, Any], pins: str | os.PathLike[str] | None = None) -> str:
    """The judge id (the folder name under autorater/) of a composed `judge` node."""
    node = cfg_judge if isinstance(cfg_judge, DictConfig) else OmegaConf.create(dict(cfg_judge))
    judge_cfg, protocol, _ = configured_judge(node, pins)
    validate_endpoint("judge", node)
    return judge_identity(judge_cfg, protocol).judge_id


def templates_stored_at(judge: JudgeProtocol, folder: str) -> str:
    """Where the protocol's templates are copied under `folder` (a prompts/ folder), as its meta
    records it: the file of a protocol's one template (Mem0's), else the folder."""
    names = list(judge.templates)
    return f"{folder}/{names[0]}" if len(names) == 1 else folder


def pack_benchmark(pack: PackReader) -> Benchmark:
    """The benchmark of a pack (`benchmark_of_pack`: what its run_meta.json records, else what its
    metrics.json does, else its dataset's); LoCoMo for a folder without either."""
    meta = pack.json_object(layout.RUN_META) if pack.exists(layout.RUN_META) else None
    metrics = pack.json_object(layout.METRICS) if pack.exists(layout.METRICS) else None
    return benchmark_of_pack(meta, metrics) if meta is not None or metrics is not None else benchmark_named(None)


def check_benchmark(protocol: JudgeProtocol, benchmark: Benchmark, where: str) -> None:
    """Refuse a protocol made for another benchmark's packs (one line naming the protocols that fit);
    a protocol that names none (Mem0's, the strict one) judges the default benchmark's."""
    own = getattr(protocol, "benchmark", DEFAULT)
    if own != benchmark.name:
        fits = sorted(name for name in JUDGES.names() if getattr(JUDGES.get(name), "benchmark", DEFAULT) == benchmark.name)
        raise UserError(
            f"{where} is a {benchmark.name} pack and judge.protocol={protocol.name} judges {own} packs; "
            f"use judge.protocol={' or '.join(fits) or '...'} (e.g. judge={fits[0] if fits else '...'})"
        )


def _judge_one(
    endpoint: Any,
    judge: JudgeProtocol,
    row: Prediction,
    n: int,
    judge_cfg: Mapping[str, Any],
    base: dict[str, Any],
    row_scores: Mapping[str, float],
) -> tuple[JudgeTrace, AutoraterVerdict]:
    """One request: its trace and its verdict (FAILED when the call or the reply fails)."""
    call = judge.request(row, model=endpoint.model, sampling=judge_cfg)
    request = call.request
    request_sha = request.sha256()
    stored = JudgeRequest(
        model=request.model,
        temperature=request.temperature,
        max_tokens=request.max_tokens,
        seed=request.seed,
        response_format=None if judge.response_format is None else dict(judge.response_format),
        template=f"{layout.JUDGE_PROMPTS}/{call.template_file}",
        template_sha256=call.template_sha256,
        slots=call.slots,
    )
    ids = dict(judge_payload_sha256=call.payload_sha256, request_sha256=request_sha, model_requested=request.model)
    common = dict(question_id=row.question_id, pass_=n, judge_prompt_sha256=judge.template_sha256, **ids)
    try:
        result = endpoint.client.complete(request)
    except ModelCallError as e:
        trace = JudgeTrace(**common, request=stored, error=e.message, attempts=list(e.attempts))
        verdict = AutoraterVerdict(**base, status="FAILED", failure="model_call", error=e.message, **row_scores, **ids)
        return trace, verdict
    parsed = judge.verdict(result.text)
    trace = JudgeTrace(**common, model_answered=result.model_answered, request=stored, response=result)
    verdict = AutoraterVerdict(
        **base,
        status=parsed.status,  # type: ignore[arg-type]
        label_raw=parsed.label,
        label_standard=parsed.standard,
        score=parsed.score,
        failure=None if parsed.label is not None else "parse",
        error=parsed.error,
        **row_scores,
        **ids,
        model_answered=result.model_answered,
    )
    return trace, verdict


def _judge_several(
    endpoint: Any,
    judge: Any,
    row: Prediction,
    n: int,
    judge_cfg: Mapping[str, Any],
    base: dict[str, Any],
    row_scores: Mapping[str, float],
) -> tuple[list[JudgeTrace], AutoraterVerdict]:
    """A question judged by several calls (`judge.several_calls`: BEAM's rubric items and
    alignments): one trace per call, in order, each naming its `part`; one verdict whose hashes
    are over all of its calls. A call without a reply ends the question FAILED (model_call)."""
    traces: list[JudgeTrace] = []

    def ask(call: Any, part: str) -> str:
        request = call.request
        stored = JudgeRequest(
            model=request.model,
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            seed=request.seed,
            response_format=None if judge.response_format is None else dict(judge.response_format),
            template=f"{layout.JUDGE_PROMPTS}/{call.template_file}",
            template_sha256=call.template_sha256,
            slots=call.slots,
            system=call.system,
        )
        common = dict(
            question_id=row.question_id,
            pass_=n,
            judge_prompt_sha256=judge.template_sha256,
            part=part,
            judge_payload_sha256=call.payload_sha256,
            request_sha256=request.sha256(),
            model_requested=request.model,
        )
        try:
            result = endpoint.client.complete(request)
        except ModelCallError as e:
            traces.append(JudgeTrace(**common, request=stored, error=e.message, attempts=list(e.attempts)))
            raise
        traces.append(JudgeTrace(**common, model_answered=result.model_answered, request=stored, response=result))
        return str(result.text or "")

    try:
        outcome = judge.judge_question(row, ask, model=endpoint.model, sampling=judge_cfg)
        failure, error = (None, None) if outcome.score is not None else ("parse", outcome.error)
    except ModelCallError as e:
        outcome, failure, error = None, "model_call", e.message
    ids = dict(
        judge_payload_sha256=sha256_text("".join(t.judge_payload_sha256 for t in traces)),
        request_sha256=sha256_text("".join(t.request_sha256 for t in traces)),
        model_requested=endpoint.model,
    )
    answered = next((t.model_answered for t in reversed(traces) if t.model_answered), None)
    if outcome is None:
        return traces, AutoraterVerdict(**base, status="FAILED", failure="model_call", error=error, **row_scores, **ids)
    return traces, AutoraterVerdict(
        **base,
        status=outcome.status,
        label_raw=outcome.label,  # type: ignore[arg-type]
        score=outcome.score,
        failure=failure,
        error=error,
        **row_scores,
        **ids,
        model_answered=answered,
    )
