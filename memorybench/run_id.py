"""Run identity: canonical resolved config + the code it names -> sha256 -> a readable run id.

The hash leaves out what does not change the experiment (DESIGN.md 3): the `hydra` node,
paths, storage, tracking, the price table, the experiment name, per-endpoint
operational settings (timeouts, retries, pacing, cache), where an endpoint is served
(`base_url`: the same model on another port or host is the same experiment, so a
restarted local server resumes its pack; run_meta.json records the address), the
memory's failure bound (`max_failed_share`), its session prefix left unset
(`max_sessions: null`), the retrieval budget's item count left unset (`budget.top_k:
null`), the question selection keys left unset (`question_ids`, `question_sample`:
`memorybench.data.selection`), and every part of the config the run's answerer does not
read (`answerer_reads`: answerer=codex outside `prompt_injected` reads no memory, reader,
writer, embedder or budget). A local model requested as `auto` is
identified by the model it resolves to (`resolved_model`), where that is known before the
run. It takes in what the config only names: the sha256 of every prompt file the run
reads (`reader.prompt`, `writer.prompt`, `memory.prompts`, an agent's task templates),
and the name, version and source hash of every plugin whose components the run uses, so
editing a prompt or a plugin gives a new run id. The same experiment gets the same id on
any machine.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorybench.data.selection import for_identity as selection_identity
from memorybench.hashing import sha256_file, sha256_json
from memorybench.plugins import installed_plugins
from memorybench.registry import ANSWERERS, CHAT_PROVIDERS, EMBEDDERS, MEMORY, SCORERS
from memorybench.errors import UserError
from memorybench.secrets import clean_config, contains_secret, looks_like_key

if TYPE_CHECKING:  # a pack's config read as plain data (verify) needs no OmegaConf
    from omegaconf import DictConfig

# the judge belongs to the autorater stage: qa never calls it, so it is not part of a qa run's identity
EXCLUDED_TOP_LEVEL = frozenset({"hydra", "paths", "storage", "tracking", "pricing", "name", "launcher", "judge"})
ENDPOINT_GROUPS = ("reader", "writer", "judge", "embedder")
OPERATIONAL_KEYS = frozenset({"timeout_s", "max_retries", "retry_max_wait_s", "min_request_interval_s", "cache", "api_key_env"})
ANSWERER_OPERATIONAL_KEYS = frozenset(
    {
        "api_key_env",
        "scratch_dir",
        "request_max_retries",
        "stream_max_retries",
        "timeout_s",
        "ingest_timeout_s",
        "audit",
        "network",
    }
)
#: where an endpoint is served, not what it is asked: out of the id, recorded in run_meta.json
ADDRESS_KEYS = frozenset({"base_url"})
#: how much failure a run tolerates, not what it asks: raising it resumes the same pack
MEMORY_OPERATIONAL_KEYS = frozenset({"max_failed_share"})
#: memory keys whose null is the run as it was before they existed: in the id only when set
#: (`memory.max_sessions`, the session prefix a writer builds from: memorybench.memory._prefix)
MEMORY_UNSET_KEYS = frozenset({"max_sessions"})
#: budget keys whose null is the run as it was before they existed: in the id only when set
#: (`budget.top_k`, one retrieval budget for every method: memorybench.pack.budget)
BUDGET_UNSET_KEYS = frozenset({"top_k"})
HEX_DIGITS = 12


def _data_file_sha256(path: str) -> str | None:
    """A local copy's sha256: a file's, or a folder's (BEAM's tiers: that of its `sha256sum`
    manifest, `memorybench.data.folders`); None when nothing is there."""
    from memorybench.data.files import file_sha256

    p = Path(path).expanduser()
    if p.is_dir():
        from memorybench.data.folders import folder_sha256

        return folder_sha256(p)
    return file_sha256(p) if p.is_file() else None


def _codex_reads(node: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """answerer=codex (memorybench/answer/agent/codex.py): `prompt_injected` fills the
    reader's template with the run's memory (of the reader, only `prompt`); the other modes
    hand the agent the sessions themselves, so no memory, reader, writer, embedder or budget."""
    if (node.get("mode") or "workspace_files") == "prompt_injected":
        return {"reader": ("prompt",)}
    return {group: () for group in ("memory", "reader", "writer", "embedder", "budget")}


def _codex_prompts(node: Mapping[str, Any]) -> list[str]:
    """The task templates codex reads in its mode (the constants of its own module)."""
    module = sys.modules[ANSWERERS.get("codex").__module__]
    mode = node.get("mode") or "workspace_files"
    names = [] if mode == "prompt_injected" else [module.WORKSPACE_TEMPLATE]
    if mode == "notes_only":
        names.append(module.INGEST_TEMPLATE)
    if node.get("persist"):
        names.append(module.PERSIST_FOOTER)
    return names


#: built-in answerers that read less than the whole config; a plugin's answerer class may
#: say the same with `config_reads(answerer_node)` and `prompt_files(answerer_node)`
_ANSWERER_READS = {"codex": _codex_reads}
_ANSWERER_PROMPTS = {"codex": _codex_prompts}


def _answerer_hook(name: Any, attr: str, builtin: Mapping[str, Any]) -> Any:
    if name in builtin:
        return builtin[name]
    if not name or str(name) not in ANSWERERS:
        return None
    return getattr(ANSWERERS.get(str(name)), attr, None)


def answerer_reads(data: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The config groups the run's answerer reads only in part: group -> the keys it reads
    (empty: none of it). Groups not named are read whole."""
    node = data.get("answerer")
    if not isinstance(node, Mapping):
        return {}
    hook = _answerer_hook(node.get("name"), "config_reads", _ANSWERER_READS)
    return dict(hook(node)) if hook is not None else {}


def used_config(data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` (plain) less what its answerer does not read (`answerer_reads`)."""
    out = dict(data)
    for group, keep in answerer_reads(data).items():
        if group not in out:
            continue
        node = out[group]
        if keep and isinstance(node, Mapping):
            out[group] = {k: v for k, v in node.items() if k in keep}
        else:
            del out[group]
    return out


def resolved_model(node: Mapping[str, Any]) -> str | None:
    """The model an endpoint node will run, known before the run: its provider's
    `resolved_model(node)` (the embedded provider resolves `auto` from its pinned GGUFs,
    starting nothing), else None (the node's `model` is what it runs)."""
    provider = node.get("provider")
    if not provider or str(provider) not in CHAT_PROVIDERS:
        return None
    hook = getattr(CHAT_PROVIDERS.get(str(provider)), "resolved_model", None)
    return hook(node) if hook is not None else None


def prompt_relpaths(data: dict[str, Any]) -> list[str]:
    """Every prompt file a resolved config has the run read, relative to a prompts folder:
    the reader's and writer's, the memory's, and its answerer's own task templates."""
    data = used_config(data)
    names = []
    for group in ("reader", "writer"):
        node = data.get(group)
        if isinstance(node, dict) and node.get("prompt"):
            names.append(str(node["prompt"]))
    memory = data.get("memory")
    if isinstance(memory, dict) and isinstance(memory.get("prompts"), dict):
        names += [str(v) for v in memory["prompts"].values() if v]
    answerer = data.get("answerer")
    if isinstance(answerer, dict):
        own = _answerer_hook(answerer.get("name"), "prompt_files", _ANSWERER_PROMPTS)
        names += [str(n) for n in own(answerer)] if own is not None else []
    return sorted(set(names))


def code_identity(
    data: dict[str, Any], prompt_sha256: dict[str, str] | None = None, plugins: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The prompts' sha256 and the plugins this run's components come from: as given (a
    pack's own prompt copies and run_meta.json's `plugins`, for checking a pack anywhere),
    else as found on this machine now."""
    from memorybench.templates import find_prompt

    prompts = {}
    for relpath in prompt_relpaths(data):
        if prompt_sha256 is not None and relpath in prompt_sha256:
            prompts[relpath] = prompt_sha256[relpath]
        else:
            prompts[relpath] = sha256_file(find_prompt(relpath))
    code: dict[str, Any] = {"prompts": prompts}
    plugins = plugins_used(data) if plugins is None else plugins
    if plugins:
        code["plugins"] = plugins
    return code


def identity_config(cfg: DictConfig | dict[str, Any], code: dict[str, Any] | None = None) -> dict[str, Any]:
    """The resolved config as plain data, minus everything outside the experiment's identity,
    plus `code` (`code_identity`: computed now unless given).

    An explicit `dataset.path` is machine-specific: the identity holds the file's sha256
    instead (the pinned default has no path and is identified by its pin).
    """
    if isinstance(cfg, dict):
        data = dict(cfg)
    else:
        from omegaconf import OmegaConf

        data = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(data, dict)
    # endpoint URLs as the pack records them (no userinfo, secret query values masked): the
    # credential is not the experiment, and never enters a hash; a URL without one is unchanged
    data = clean_config(data)
    code = code_identity(data) if code is None else code
    out = {k: v for k, v in used_config(data).items() if k not in EXCLUDED_TOP_LEVEL}
    # question_ids / question_sample enter only when set (a config from before them keeps its id)
    out = selection_identity(out)
    for group in ENDPOINT_GROUPS:
        if isinstance(out.get(group), dict):
            node = {k: v for k, v in out[group].items() if k not in OPERATIONAL_KEYS | ADDRESS_KEYS}
            resolved = resolved_model(node)
            if resolved:
                node["model"] = resolved
            out[group] = node
    if isinstance(out.get("memory"), dict):
        out["memory"] = {
            k: v
            for k, v in out["memory"].items()
            if k not in MEMORY_OPERATIONAL_KEYS and not (k in MEMORY_UNSET_KEYS and v is None)
        }
    if isinstance(out.get("budget"), dict):
        out["budget"] = {k: v for k, v in out["budget"].items() if not (k in BUDGET_UNSET_KEYS and v is None)}
    answerer = out.get("answerer")
    if isinstance(answerer, dict):
        out["answerer"] = {k: v for k, v in answerer.items() if k not in ANSWERER_OPERATIONAL_KEYS | ADDRESS_KEYS}
        # an agent's budget that sets no limit is the run as it was before budgets existed: same id
        budget = out["answerer"].get("budget")
        if isinstance(budget, dict) and not any(v for v in budget.values()):
            del out["answerer"]["budget"]
    dataset = out.get("dataset")
    if isinstance(dataset, dict) and dataset.get("path"):
        digest = _data_file_sha256(str(dataset["path"]))
        out["dataset"] = {k: v for k, v in dataset.items() if k != "path"}
        out["dataset"]["file_sha256"] = digest or f"missing:{dataset['path']}"
    out["code"] = code
    return out


def config_sha256(cfg: DictConfig | dict[str, Any], code: dict[str, Any] | None = None) -> str:
    return run_identity(cfg, code)[1]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-").lower() or "x"


def run_id(cfg: DictConfig | dict[str, Any], code: dict[str, Any] | None = None) -> str:
    """`<memory>-<answerer>-<model>-<12 hex>`: readable, and unique per identity config (an
    answerer that reads no memory names its mode instead: `workspace_files-codex-...`)."""
    return run_identity(cfg, code)[0]


def run_identity(cfg: DictConfig | dict[str, Any], code: dict[str, Any] | None = None) -> tuple[str, str]:
    """(run id, config sha256) from one identity config: the prompt files are read and the
    plugins hashed once."""
    data = identity_config(cfg, code)
    sha = sha256_json(data)
    memory = data.get("memory", {}).get("name") or data.get("answerer", {}).get("mode") or "memory"
    answerer = data.get("answerer", {}).get("name", "answerer")
    reader = data.get("reader", {})
    # an answerer with a model of its own (an agent) names it; the reader's is reader.model
    model = data.get("answerer", {}).get("model") or reader.get("model") or reader.get("name") or "model"
    where = (
        "answerer.model" if data.get("answerer", {}).get("model") else "reader.model" if reader.get("model") else "reader.name"
    )
    for key, value in (("memory.name", memory), ("answerer.name", answerer), (where, model)):
        _refuse_secret(key, str(value))
    prefix = "-".join(_slug(str(p)) for p in (memory, answerer, model))
    return f"{prefix}-{sha[:HEX_DIGITS]}", sha


def _refuse_secret(key: str, value: str) -> None:
    """A credential never enters a run id: it would be the pack's folder name and part of
    every bucket path, MLflow run and log line that names the run."""
    if contains_secret(value) or looks_like_key(value):
        raise UserError(
            f"{key} holds a credential (an API key or token; not shown): it would become part of the run id, the pack's "
            f"folder and bucket paths; set {key} to the model's name and keep the key in its environment variable (api_key_env)"
        )


def plugins_used(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The plugins whose components a resolved config (plain data) selects, or that add a
    scorer (scorers apply to every run), described as run_meta.json records them."""
    plugins = installed_plugins()
    if not plugins:
        return []

    def node(group: str) -> dict[str, Any]:
        value = config.get(group)
        return value if isinstance(value, dict) else {}

    selected = [
        (MEMORY, node("memory").get("name")),
        (ANSWERERS, node("answerer").get("name")),
        (CHAT_PROVIDERS, node("reader").get("provider")),
        (CHAT_PROVIDERS, node("writer").get("provider")),
        (EMBEDDERS, node("embedder").get("provider")),
    ]
    modules = {registry.module_of(str(name)) for registry, name in selected if name and str(name) in registry}
    modules |= {SCORERS.module_of(name) for name in SCORERS.names()}
    used = []
    for plugin in plugins:
        if any(m == plugin.module or m.startswith(plugin.module + ".") for m in modules):
            used.append(plugin.describe())
    return used
