"""Components from other installed packages: the `memorybench.plugins` entry-point group.

A plugin package declares, in its pyproject.toml,

    [project.entry-points."memorybench.plugins"]
    my_methods = "my_methods"

naming a module that the plugins' loading imports, and that may set `CONFIG_DIR`, a folder
laid out like memorybench's `conf/` (`memory/last_turns.yaml`), which Hydra searches after
ours (through the search-path plugin in launchers/), so `memory=last_turns` works with no
flag. Its `PROMPTS_DIR`, if set, is searched for prompt files after ours.

A component is registered where it is configured, as memorybench's own are: a YAML of
`CONFIG_DIR` names the module of its component in its defaults list
(`defaults: [mb_last_turns.method, _self_]`), so the registry knows the name from the YAML
and imports that module when the component is first got, and Hydra imports it when it
composes the option (its config schema node, `store_schema`). The entry-point module may also
register components itself when imported (`@MEMORY.register(...)`, `@SCORERS.register(...)`:
a scorer has no YAML). A command that only lists a registry (`show`, `verify` list the
scorers) imports the entry-point module and nothing its YAMLs name. An older plugin's
`SCHEMA_MODULES` ({group: {option: module}}), naming the modules that store the schema nodes
its YAMLs name as `<option>_schema`, is still read.

Each plugin's name, distribution, version and the sha256 of its source files are
recorded in run_meta.json and enter the run id: editing a plugin gives a new run id. A
plugin that wraps third-party libraries (a real memory system) names their distributions
in `WRAPS` (`WRAPS = ("mem0ai", "qdrant-client")`); their installed versions are recorded
too (`wraps`), so upgrading a wrapped library gives a new run id as well. A plugin whose
library lives in an environment of its own (a venv behind a process boundary: Hindsight)
defines `wrapped_versions()` instead, which returns {distribution: version} as that
environment has them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, entry_points, version
from pathlib import Path
from types import ModuleType
from typing import Any

from memorybench.errors import UserError
from memorybench.hashing import sha256_parts

GROUP = "memorybench.plugins"
#: file endings whose bytes make up a plugin's source hash
SOURCE_SUFFIXES = (".py", ".yaml", ".yml", ".txt", ".json", ".md", ".toml")


@dataclass(frozen=True)
class Plugin:
    name: str
    module: str
    distribution: str | None
    version: str | None

    def load(self) -> ModuleType:
        try:
            return importlib.import_module(self.module)
        except Exception as e:  # a broken plugin must not look like a memorybench bug
            raise UserError(
                f"plugin {self.name!r} ({self.module}, from {self.distribution or 'an unknown package'}) failed to import: "
                f"{type(e).__name__}: {' '.join(str(e).split())}; fix or uninstall that package"
            ) from None

    def folder(self, attr: str) -> Path | None:
        value = getattr(self.load(), attr, None)
        return Path(value).resolve() if value else None

    def source_files(self) -> list[Path]:
        """The plugin's own files: a package's folder (its conf and prompts included when they
        live there), or a single module's file, plus CONFIG_DIR and PROMPTS_DIR elsewhere."""
        module_file = Path(self.load().__file__ or "").resolve()
        if module_file.name == "__init__.py":
            files = _tree(module_file.parent)
        else:
            files = [module_file]
        for extra in (self.folder("CONFIG_DIR"), self.folder("PROMPTS_DIR")):
            if extra and extra.is_dir():
                files += [f for f in _tree(extra) if f not in files]
        return files

    def source_sha256(self) -> str:
        """sha256 over each source file's name and bytes, in path order: any edit changes it."""
        return sha256_parts(path.name.encode("utf-8") + b"\0" + path.read_bytes() + b"\0" for path in sorted(self.source_files()))

    def describe(self) -> dict[str, Any]:
        """What run_meta.json records of the plugin (and what enters the run id); `wraps`
        only for a plugin that declares `WRAPS`."""
        described: dict[str, Any] = {
            "name": self.name,
            "module": self.module,
            "distribution": self.distribution,
            "version": self.version,
            "source_sha256": self.source_sha256(),
        }
        wraps = self.wrapped_versions()
        if wraps is not None:
            described["wraps"] = wraps
        return described

    def wrapped_versions(self) -> dict[str, str | None] | None:
        """{distribution: installed version (None: not installed)} of the libraries the plugin
        names in `WRAPS`, sorted by name (or what its own `wrapped_versions()` says of an
        environment of its own); None when it names none."""
        module = self.load()
        own = getattr(module, "wrapped_versions", None)
        if callable(own):
            return {str(k): (None if v is None else str(v)) for k, v in sorted(dict(own()).items())}
        names = getattr(module, "WRAPS", None)
        if not names:
            return None
        return {name: _installed_version(name) for name in sorted(str(n) for n in names)}


def _installed_version(distribution: str) -> str | None:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def _tree(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES and "__pycache__" not in p.parts)


@lru_cache(maxsize=1)
def installed_plugins() -> tuple[Plugin, ...]:
    """Every entry of the group, sorted by name."""
    found = []
    for ep in entry_points(group=GROUP):
        dist = getattr(ep, "dist", None)
        found.append(Plugin(ep.name, ep.value.split(":", 1)[0], getattr(dist, "name", None), getattr(dist, "version", None)))
    return tuple(sorted(found, key=lambda p: p.name))


def config_dirs() -> list[Path]:
    """The conf folders of the installed plugins (for Hydra's search path)."""
    return [d for p in installed_plugins() if (d := p.folder("CONFIG_DIR")) and d.is_dir()]


def prompt_dirs() -> list[Path]:
    """The prompt folders of the installed plugins (searched after memorybench's prompts/)."""
    return [d for p in installed_plugins() if (d := p.folder("PROMPTS_DIR")) and d.is_dir()]


def plugins_meta() -> list[dict[str, Any]]:
    return [p.describe() for p in installed_plugins()]


def plugin_schema_modules() -> dict[str, dict[str, str]]:
    """{group: {option: module}} of the schema nodes the installed plugins name in their
    `SCHEMA_MODULES` (imported when Hydra first reads the node): the older form of what a
    YAML that names its module says (`memorybench.config`)."""
    out: dict[str, dict[str, str]] = {}
    for plugin in installed_plugins():
        declared = getattr(plugin.load(), "SCHEMA_MODULES", None) or {}
        if not isinstance(declared, dict) or not all(
            isinstance(options, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in options.items())
            for options in declared.values()
        ):
            raise UserError(
                f"plugin {plugin.name!r} ({plugin.module}): SCHEMA_MODULES is {{group: {{option: module}}}} "
                f"of strings, not {declared!r}"
            )
        for group, options in declared.items():
            out.setdefault(str(group), {}).update(options)
    return out


def plugin_benchmarks() -> list[tuple[str, Any]]:
    """(plugin name, what it declares in `BENCHMARKS`) of each installed plugin that declares
    benchmarks (`memorybench.benchmark` checks that each is a `Benchmark` record)."""
    out = []
    for plugin in installed_plugins():
        declared = getattr(plugin.load(), "BENCHMARKS", None)
        if declared is not None:
            out.append((f"{plugin.name} ({plugin.module})", declared))
    return out


def plugin_config_error(error: BaseException) -> UserError | None:
    """A plugin's code that reads a config key its schema does not declare fails deep in
    OmegaConf (`ConfigAttributeError: Missing key window`): as one line naming the plugin,
    the key, the line that read it and the fix. None when the error is not that (a key our
    own code misses is our bug, and keeps its traceback)."""
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    if not isinstance(error, (ConfigAttributeError, ConfigKeyError)):
        return None
    plugins = {p.module.split(".", 1)[0]: p for p in installed_plugins()}
    where = None
    frame = error.__traceback__
    while frame is not None:  # the innermost frame of a plugin's own code
        root = str(frame.tb_frame.f_globals.get("__name__", "")).split(".", 1)[0]
        if root in plugins:
            where = (plugins[root], Path(frame.tb_frame.f_code.co_filename).name, frame.tb_lineno)
        frame = frame.tb_next
    if where is None:
        return None
    plugin, file, line = where
    key = getattr(error, "full_key", None) or str(getattr(error, "key", None) or "?")
    return UserError(
        f"plugin {plugin.name} reads config key {key!r} ({file}:{line}), which its config does not declare; "
        f"add it with a default to the plugin's schema dataclass and its conf/ yaml, or read it with .get()"
    )
