"""Compose run specs from overrides, and expand a `-m` sweep, without running anything.

Every job of a sweep is composed and validated here before any model call, so a bad
override fails at once with one line naming the value and the choices. Each spec is also
checked against what `qa` will meet: every implementation it calls, loaded from the
registry with the methods a run calls (`check_implementations`: answerer, chat
providers, memory method, embedder, scorers, each plugin's module), and every file it
reads (`check_files`: the dataset or its verified pin, every prompt template), so `plan`
fails where `qa` would, in one line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from memorybench import CONF_DIR
from memorybench.config import load_component_configs
from memorybench.names import resolved_path
from memorybench.errors import MissingExtra, UserError, did_you_mean, require_extra
from memorybench.registry import ANSWERERS, CHAT_PROVIDERS, EMBEDDERS, MEMORY, SCORERS, Registry
from memorybench.run_id import prompt_relpaths, run_identity
from memorybench.validate import check_installed, validate_config

#: `hydra/launcher` options that are not Hydra's or memorybench's own: Hydra's submitit plugin
#: comes with the `cloud` extra, our Cloud Run launchers with the launchers/ package beside it
#: (launchers/README.md): option -> (its plugin's module, how to install it, what else it imports)
_CLOUD = 'pip install "memorybench[cloud]"'
_LAUNCHERS_PACKAGE = f"{_CLOUD} && pip install --no-deps -e launchers/ --config-settings editable_mode=compat (in a checkout)"
LAUNCHER_EXTRAS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "submitit_local": ("hydra_plugins.hydra_submitit_launcher", _CLOUD, ("submitit",)),
    "submitit_slurm": ("hydra_plugins.hydra_submitit_launcher", _CLOUD, ("submitit",)),
    "cloudrun": (
        "hydra_plugins.memorybench_cloudrun_launcher",
        _LAUNCHERS_PACKAGE,
        ("google.cloud.run_v2", "google.cloud.storage"),
    ),
    "cloudrun_local": ("hydra_plugins.memorybench_cloudrun_launcher", _LAUNCHERS_PACKAGE, ()),
}

GROUPS = ("dataset", "memory", "reader", "writer", "embedder", "answerer", "judge", "tracking", "storage", "paths", "experiment")


@dataclass(frozen=True)
class RunSpec:
    """One composed job: its overrides, its config (no hydra node) and its identity."""

    overrides: tuple[str, ...]
    cfg: DictConfig
    run_id: str
    config_sha256: str

    @property
    def name(self) -> str:
        return str(self.cfg.name)


def group_options(group: str, conf_dir: Path = CONF_DIR) -> list[str]:
    return sorted(p.stem for p in (conf_dir / group).glob("*.yaml"))


def _installed_options(group: str) -> list[str]:
    """A group's options: memorybench's and the installed plugins' (`memorybench.plugins.config_dirs`)."""
    from memorybench.plugins import config_dirs

    return sorted({*group_options(group), *(o for d in config_dirs() for o in group_options(group, d))})


def _not_installed(group: str, value: str) -> UserError | None:
    """An option of a plugin package of this checkout (`plugins/<name>/`) that is not installed:
    one line naming the plugin and its install command (its README's)."""
    from memorybench import PROJECT_ROOT

    for found in sorted((PROJECT_ROOT / "plugins").glob(f"*/*/conf/{group}/{value}.yaml")):
        plugin = found.parents[3]
        install = (
            f"bash plugins/{plugin.name}/install.sh"
            if (plugin / "install.sh").is_file()
            else f".venv/bin/pip install -e plugins/{plugin.name}"
        )
        return UserError(
            f"{group}={value} is the plugin plugins/{plugin.name}, which is not installed: install it with "
            f"`{install}` (plugins/{plugin.name}/README.md), or leave {value} out of the sweep"
        )
    return None


def _explain(error: Exception, overrides: list[str]) -> UserError:
    """Turn Hydra/OmegaConf's multi-line errors into one line with the fix."""
    message = " ".join(str(error).split())
    if error.__cause__ is not None:
        # Hydra wraps OmegaConf's ValidationError; its message names the type problem
        cause = " ".join(str(error.__cause__).split()).split(" full_key:")[0]
        message = f"{message}: {cause}"
    if isinstance(error, MissingConfigException) or "Could not find" in message:
        if "'hydra/launcher/" in message:
            try:  # a launcher whose plugin is not installed: the extra that brings it
                check_launcher_installed(overrides)
            except MissingExtra as missing:
                return missing
        for override in overrides:
            key, _, value = override.lstrip("+~").partition("=")
            group = key.split("@")[0]
            if group in GROUPS and value and "," not in value and value not in (known := _installed_options(group)):
                return _not_installed(group, value) or UserError(
                    f"unknown {group} option '{value}'. {did_you_mean(value, known)}"
                )
        return UserError(f"{message.split(' Available options')[0]}; see `memorybench plan --help`")
    if isinstance(error, MissingMandatoryValue):
        key = getattr(error, "full_key", "") or message
        return UserError(f"missing value for {key}; add `{key}=...` to the command line")
    if "Could not override '" in message:
        unknown = _unknown_key(message.split("Could not override '", 1)[1].split("'", 1)[0], overrides)
        if unknown is not None:
            return unknown
    if "Key '" in message and "not in struct" in message or "Could not override" in message:
        message = re.sub(r" To append to your config use \S+", "", message)  # a `+` key is refused by validation
        return UserError(f"{message}; check the key's spelling (`memorybench qa --cfg job` prints every key)")
    if "Multiple values for " in message:
        group = message.split("Multiple values for ", 1)[1].split(".")[0]
        return UserError(f"{group} is in the defaults list already: select it with {group}=NAME, without the '+'")
    return UserError(f"bad configuration: {message}")


def _unknown_key(key: str, overrides: list[str]) -> UserError | None:
    """`memory.topk=3` or `memroy=rag`: a key (or group) the config does not have. One line with
    the did-you-mean and the valid keys of that node (the groups too at the top), never Hydra's
    advice to add a `+` (validation refuses a key no schema declares); None when the key exists
    (a bad value: Hydra's message says it better)."""
    override = next((o for o in overrides if o.lstrip("+~").partition("=")[0] == key), key)
    parent, _, leaf = key.rpartition(".")
    if not parent:
        from memorybench.config import Config

        keys = {f.name for f in dataclasses.fields(Config)} | set(GROUPS)
        if leaf in keys:
            return None
        return UserError(
            f"unknown config group or key {key!r} ({override}). "
            f"{did_you_mean(leaf, keys, label='groups and top-level keys')}; fix the spelling"
        )
    try:
        others = [o for o in overrides if o.lstrip("+~").partition("=")[0] != key]
        node = compose(config_name="config", overrides=others)
        node = OmegaConf.select(node, parent) if parent else node
    except Exception:  # noqa: BLE001  (another override is bad too: Hydra's own message then)
        return None
    if not isinstance(node, DictConfig) or leaf in node:
        return None
    group = parent.split(".")[0]
    option = node.get("name") if parent == group else None
    label = f"{parent} keys" + (f" ({group}={option})" if option else "")
    return UserError(
        f"unknown key {key!r} ({override}). {did_you_mean(leaf, [str(k) for k in node.keys()], label=label)}; "
        f"fix the spelling (a {group} takes only the keys its schema declares)"
    )


def check_launcher_installed(overrides: list[str]) -> None:
    """A `hydra/launcher=NAME` override of `LAUNCHER_EXTRAS`: the modules its plugin imports are
    installed (found, not imported), else one line naming the `cloud` extra and the install."""
    for override in overrides:
        key, _, value = override.lstrip("+~").partition("=")
        if key == "hydra/launcher" and value in LAUNCHER_EXTRAS:
            plugin, fix, imports = LAUNCHER_EXTRAS[value]
            what = (
                f"hydra/launcher={value} needs its launcher plugin",
                "drop hydra/launcher: the basic launcher runs the jobs here",
            )
            require_extra("cloud", *what, modules=(plugin,), fix=fix)
            if imports:
                require_extra("cloud", *what, modules=imports)


def check_jobs_installed(specs: list[RunSpec], overrides: list[str]) -> None:
    """A sweep whose jobs run on this machine (Hydra's basic launcher, submitit_local,
    cloudrun_local): the extras each job imports are installed (`validate.check_installed`),
    else one line before Hydra starts, not one failed job after another. Jobs on Cloud Run
    or a Slurm cluster have their own environment: not checked here."""
    launcher = next((o.partition("=")[2] for o in overrides if o.lstrip("+~").partition("=")[0] == "hydra/launcher"), "basic")
    if launcher in ("basic", "submitit_local", "cloudrun_local"):
        for spec in specs:
            check_installed(spec.cfg)


def compose_spec(overrides: list[str]) -> RunSpec:
    """Compose one job (call inside `initialize_config_dir`)."""
    try:
        cfg = compose(config_name="config", overrides=list(overrides))
        container = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except (HydraException, OmegaConfBaseException, ValueError) as e:
        raise _explain(e, list(overrides)) from None
    plain = OmegaConf.create(container)
    # the answerer and the memory method first: validation calls their own checks
    implementation(ANSWERERS, str(plain.answerer.name), "answerer")
    implementation(MEMORY, str(plain.memory.name), "memory")
    validate_config(plain)
    check_implementations(plain)
    check_files(plain)
    return RunSpec(tuple(overrides), plain, *run_identity(plain))


#: what a stage calls on each kind of component (a registered name without them fails at run time)
REQUIRED_METHODS: dict[str, tuple[str, ...]] = {
    "memory": ("build", "for_question"),
    "answerer": ("open",),
    "chat_provider": ("open",),
}


def implementation(registry: Registry, name: str, kind: str, option: str | None = None) -> object:
    """The component registered as `name`, loaded (a lazy "module:attr" imported), with the
    methods a run calls; else one line naming it (as `option`=name) and the fix."""
    option = option or registry.option
    if name not in registry:
        raise UserError(f"unknown {registry.kind} {name!r} ({option}={name}). {did_you_mean(name, registry.names())}")
    try:
        target = registry.get(name)
    except UserError:
        raise
    except Exception as e:  # noqa: BLE001  (a lazy entry whose module or attribute is broken)
        raise UserError(
            f"{registry.kind} {name!r} ({option}={name}) cannot be loaded: "
            f"{type(e).__name__}: {' '.join(str(e).split())}; fix its module or choose another"
        ) from None
    missing = [m for m in REQUIRED_METHODS.get(kind, ()) if not callable(getattr(target, m, None))]
    if missing:
        raise UserError(
            f"{registry.kind} {name!r} ({option}={name}) does not implement {', '.join(missing)}; "
            f"implement it in {registry.module_of(name)} or choose another. {did_you_mean(name, registry.names())}"
        )
    return target


def check_implementations(cfg: DictConfig) -> None:
    """Every component the run calls, loaded from the registry with the methods a run calls:
    its answerer, the reader's chat provider (answerer=reader), the memory method (qa builds
    it whoever answers), the writer's provider when a writer writes the memory, the
    embedder when the memory embeds, and every scorer. A broken plugin module is named."""
    from memorybench.memory._notes import writes_memory
    from memorybench.plugins import installed_plugins

    for plugin in installed_plugins():
        plugin.load()  # a broken plugin module: one line naming it
    implementation(ANSWERERS, str(cfg.answerer.name), "answerer")
    if str(cfg.answerer.name) == "reader":
        implementation(CHAT_PROVIDERS, str(cfg.reader.provider), "chat_provider")
    memory = implementation(MEMORY, str(cfg.memory.name), "memory")
    if writes_memory(memory, cfg):  # type: ignore[arg-type]
        if cfg.writer.get("provider") in (None, "none"):  # as the writer says when qa builds the memory
            raise UserError(
                f"memory={cfg.memory.name} writes its memory with a model, but writer={cfg.writer.name}; add writer=openai, "
                "writer=local, or writer=openai_compatible writer.base_url=... writer.model=..."
            )
        implementation(CHAT_PROVIDERS, str(cfg.writer.provider), "chat_provider", "writer.provider")
    if getattr(memory, "uses_embedder", False):
        implementation(EMBEDDERS, str(cfg.embedder.provider), "embedder")
    for name in SCORERS.names():
        implementation(SCORERS, name, "scorer")


def check_files(cfg: DictConfig) -> None:
    """Every file the run reads, there now: the dataset (an explicit file, or the pin
    verified by its sha256), every id `question_ids` lists in it, and every prompt template
    the run reads (`prompt_relpaths`: the reader's, the writer's, the memory's, the
    answerer's own; a pinned one verified)."""
    from memorybench.data.source import checked, resolve_dataset
    from memorybench.templates import find_prompt

    if cfg.dataset.get("path"):
        from memorybench.benchmark import dataset_named

        # a missing file, a folder, a FIFO, a device or a symlink loop: the line qa would give
        record = dataset_named(str(cfg.dataset.name))
        record.check_memory(checked(record, resolved_path(str(cfg.dataset.path), "dataset.path")))
    else:
        resolve_dataset(cfg.dataset, cfg.paths.get("pins"))
    from memorybench.plan_questions import check_memory_fits

    check_memory_fits(cfg)  # a haystack the embedded reader cannot hold: said now, not at the first call
    from memorybench.memory._writer_fit import check_build

    check_build(cfg)  # memory.max_sessions, and a writer prompt the embedded writer cannot hold: named now
    if cfg.get("question_ids") is not None:  # an id the dataset does not have: one line now, not at qa
        from memorybench.data import iter_questions
        from memorybench.data.selection import select_questions
        from memorybench.data.source import load_dataset, resolve_dataset

        path, _ = resolve_dataset(cfg.dataset, cfg.paths.get("pins"))
        select_questions(list(iter_questions(load_dataset(path, str(cfg.dataset.name)))), cfg)
    data = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(data, dict)
    for relpath in prompt_relpaths(data):
        find_prompt(relpath)


def sweep_jobs(overrides: list[str]) -> list[list[str]]:
    """The override list of every job a `-m` sweep makes, in Hydra's BasicSweeper order."""
    parser = OverridesParser.create()
    try:
        parsed = parser.parse_overrides(overrides)
        fixed = [o.input_line for o in parsed if not o.is_sweep_override()]
        params = _sweep_params(fixed)
        lines = [f"{k}={v}" for k, v in params.items()] + list(overrides)
        return BasicSweeper.split_arguments(parser.parse_overrides(lines), None)[0]
    except (HydraException, OmegaConfBaseException, ValueError) as e:
        raise _explain(e, list(overrides)) from None


def _sweep_params(fixed: list[str]) -> Any:
    """`hydra.sweeper.params` of the config `fixed` composes. A key of a group the sweep
    chooses (`memory.max_sessions=1` beside the experiment's `memory: mem0,graph`) may not
    exist in that group's default option: then the params are read with the group
    selections and `hydra.` keys alone (they cannot change under a key's value), and each
    job is composed, and checked, with every override."""
    try:
        base = compose(config_name="config", overrides=fixed, return_hydra_config=True)
    except (HydraException, OmegaConfBaseException):
        selections = [o for o in fixed if "." not in o.lstrip("+~").partition("=")[0] or o.lstrip("+~").startswith("hydra.")]
        if len(selections) == len(fixed):
            raise
        base = compose(config_name="config", overrides=selections, return_hydra_config=True)
    return base.hydra.sweeper.get("params") or {}


@contextlib.contextmanager
def hydra_context(job_name: str = "memorybench") -> Iterator[None]:
    """Hydra's compose API over memorybench's conf/ (and the plugins' folders), with every
    component's schema node stored first."""
    load_component_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name=job_name):
        yield


def plan_runs(overrides: list[str], multirun: bool = False) -> list[RunSpec]:
    """Compose and validate every run spec that `memorybench qa [-m] OVERRIDES` would run."""
    with hydra_context():
        jobs = sweep_jobs(overrides) if multirun else [list(overrides)]
        return [compose_spec(job) for job in jobs]
