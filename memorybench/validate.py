"""Checks a composed config must pass before any model call (beyond Hydra's types).

Each component checks its own settings (`check(cfg)` on a memory method or an answerer,
`check(group, node)` on a chat provider); this module only asks each one in turn. It also
refuses keys no schema declares (a `+group.key=...` override adds a key Hydra never
checks, so a typo would be accepted, ignored and counted in the run id), and registers the
config's credentials for scrubbing (`memorybench.secrets`): every composed config passes
here, in qa, plan, autorater and the cloud worker alike.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig

from memorybench.answer.prompt import check_reader_template
from memorybench.config import Config, component_schema
from memorybench.errors import UserError, did_you_mean
from memorybench.names import path_component
from memorybench.registry import ANSWERERS, MEMORY
from memorybench.secrets import known_secrets, register


def validate_config(cfg: DictConfig) -> None:
    register(known_secrets(cfg))  # first: any error line below is scrubbed of them
    known = {f.name for f in dataclasses.fields(Config)}
    unknown = sorted(set(cfg.keys()) - known)
    if unknown:
        raise UserError(
            f"unknown top-level key {unknown[0]!r}. {did_you_mean(unknown[0], known, label='top-level keys')}; "
            f"remove the +{unknown[0]}=... override (a config takes only the keys its schema declares)"
        )
    path_component(cfg.name, "experiment name", "set name=NAME")  # a folder under the packs root
    if cfg.max_questions is not None and int(cfg.max_questions) < 1:
        raise UserError(f"max_questions={cfg.max_questions} must be at least 1 (or null for every question)")
    from memorybench.data.selection import check_selection

    check_selection(cfg)  # question_ids / question_sample: alone, no id twice, per_kind >= 1
    components = (ANSWERERS.get(str(cfg.answerer.name)), MEMORY.get(str(cfg.memory.name)))  # their schemas are stored on import
    for group in sorted(known):
        node = cfg.get(group)
        schema = component_schema(group, node.get("name")) if isinstance(node, Mapping) else None
        if schema is not None:
            check_declared_keys(node, schema, group)
    for component in components:
        check = getattr(component, "check", None)
        if check is not None:
            check(cfg)
    check_reader_template(cfg)  # a pinned Mem0 prompt fits only some answerers and memories


def check_installed(cfg: DictConfig) -> None:
    """The optional extras this run imports are installed, else one line naming the extra
    (`memorybench.errors.require_extra`): the embedded model for a local reader (answerer=reader)
    or a local writer that writes the memory (`local`), the offline embedder when the memory
    embeds (`minilm`). `qa` calls it before it writes anything; `plan` and
    `validate_config` do not: a plan made here may be for a machine that has them (a gs://
    root's google-cloud-storage is checked where the storage is opened, before any write)."""
    from memorybench.embed import check_embedder_installed
    from memorybench.llm.endpoints import check_endpoint_installed
    from memorybench.memory._notes import writes_memory

    if str(cfg.answerer.name) == "reader":
        check_endpoint_installed("reader", cfg.reader)
    memory = MEMORY.get(str(cfg.memory.name))
    if writes_memory(memory, cfg) and cfg.writer.get("provider") not in (None, "none"):  # type: ignore[arg-type]
        check_endpoint_installed("writer", cfg.writer)
    if getattr(memory, "uses_embedder", False):
        check_embedder_installed(cfg.embedder)


def _dataclass_in(hint: Any) -> type | None:
    """The dataclass a field's type names (`X` or `Optional[X]`), if any."""
    for candidate in (hint, *typing.get_args(hint)):
        if isinstance(candidate, type) and dataclasses.is_dataclass(candidate):
            return candidate
    return None


def check_declared_keys(node: Mapping[str, Any], schema: type, where: str) -> None:
    """Every key of `node` is a field of `schema` (nested schemas too; free-form dict fields
    such as `memory.prompts` take any key), else one line naming the key and the choices."""
    fields = [f.name for f in dataclasses.fields(schema)]  # type: ignore[arg-type]
    for key in node:
        if key not in fields:
            raise UserError(
                f"unknown key {where}.{key}. {did_you_mean(str(key), fields, label=f'{where} keys')}; "
                f"remove the +{where}.{key}=... override (a component takes only the keys its schema declares)"
            )
    try:
        hints = typing.get_type_hints(schema)
    except (NameError, TypeError):  # a schema with annotations that do not resolve here: its top level is checked
        return
    for key in node:
        inner = _dataclass_in(hints.get(str(key)))
        if inner is not None and isinstance(node[key], Mapping):
            check_declared_keys(node[key], inner, f"{where}.{key}")
