"""Checks a composed config must pass before any model call (beyond Hydra's types)."""

from __future__ import annotations

import dataclasses

from omegaconf import DictConfig

from memorybench.config import Config

from memorybench.errors import UserError, did_you_mean

PROVIDERS = ("openai", "openai_compatible", "local")


def validate_config(cfg: DictConfig) -> None:
    known = {f.name for f in dataclasses.fields(Config)}
    unknown = sorted(set(cfg.keys()) - known)
    if unknown:
        raise UserError(
            f"unknown top-level key {unknown[0]!r}; top-level keys are: {', '.join(sorted(known))} "
            "(remove the +key=value override)"
        )
    if cfg.max_questions is not None and int(cfg.max_questions) < 1:
        raise UserError(f"max_questions={cfg.max_questions} must be at least 1 (or null for every question)")
    if cfg.answerer.name == "reader":
        _validate_endpoint("reader", cfg.reader)
    if cfg.answerer.name == "codex":
        from memorybench.answer.agent import validate_codex_config

        validate_codex_config(cfg)
    if cfg.memory.name == "session_summaries":
        source = cfg.memory.source
        if source not in ("released", "writer"):
            raise UserError(f"memory.source={source!r} is not one of: released, writer")
        if source == "writer" and not cfg.writer.get("model"):
            raise UserError("memory.source=writer needs a writer model; add writer=... with writer.model set")


def _validate_endpoint(group: str, node: DictConfig) -> None:
    provider = node.provider
    if provider not in PROVIDERS:
        raise UserError(f"{group}.provider={provider!r} is unknown. {did_you_mean(str(provider), PROVIDERS)}")
    if provider != "local" and not node.get("base_url"):
        raise UserError(f"{group}.base_url is required for provider {provider}; add {group}.base_url=http://HOST:PORT/v1")
    if provider != "local" and not node.get("model"):
        raise UserError(f"{group}.model is required for provider {provider}; add {group}.model=MODEL_ID")
    if int(node.max_tokens) < 1:
        raise UserError(f"{group}.max_tokens={node.max_tokens} must be at least 1")
    if float(node.temperature) < 0:
        raise UserError(f"{group}.temperature={node.temperature} must be >= 0")
    if int(node.max_retries) < 0:
        raise UserError(f"{group}.max_retries={node.max_retries} must be >= 0")
    if float(node.timeout_s) <= 0:
        raise UserError(f"{group}.timeout_s={node.timeout_s} must be > 0")
    if float(node.min_request_interval_s) < 0:
        raise UserError(f"{group}.min_request_interval_s={node.min_request_interval_s} must be >= 0")
    for bound in ("json_max_items", "json_max_chars"):
        if bound in node and int(node[bound]) < 1:
            raise UserError(f"{group}.{bound}={node[bound]} must be at least 1")
