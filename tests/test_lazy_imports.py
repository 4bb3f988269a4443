"""A command imports what it needs: the registries name their built-in members without
importing them, and `memorybench plan` never loads NLTK, scipy, scikit-learn, torch, MLflow,
matplotlib or pandas; `show` and `verify` of a pack load neither Hydra nor numpy, nor a
plugin's config schema or method (issue 31). These test the import graph, never a time."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_in_process, scripted_reader
from hydra.core.config_store import ConfigStore

from memorybench.config import schema_modules
from memorybench.registry import ANSWERERS, EMBEDDERS, JUDGES, MEMORY

HEAVY = ("nltk", "scipy", "sklearn", "torch", "mlflow", "matplotlib", "pandas", "pyarrow", "openai", "numpy")

_PROBE = """
import json, sys
from memorybench.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _modules(*args: str) -> set[str]:
    """Every module `memorybench ARGS` has imported when it ends (a fresh process)."""
    env = {**os.environ}
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, env=env, timeout=120)
    result = json.loads(proc.stderr.strip().splitlines()[-1])
    assert result["code"] == 0, proc.stderr
    return set(result["modules"])


def _top_level_modules(*args: str) -> set[str]:
    return {m for m in _modules(*args) if "." not in m}


def test_plan_imports_no_heavy_library() -> None:
    loaded = _top_level_modules("plan", "memory=session_summaries")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_plan_imports_no_pack_records() -> None:
    """A plan composes and checks a config: the reader's class is looked up (answer.reader
    imports the pack's records where a call is traced) and a method's module imports its
    config (memory._context imports the build machinery where a memory is built); listing
    the scorers compiles no LoCoMo article pattern (`regex`); the call records (pydantic) are
    imported where an endpoint is opened or a call made, so no pydantic model is built."""
    loaded = _modules("plan", "memory=session_summaries")
    records = {
        "memorybench.pack.reader",
        "memorybench.pack.schemas",
        "memorybench.pack.autorater_schemas",
        "memorybench.memory._records",
        "memorybench.memory._managed",
        "regex",
        "memorybench.llm.records",
        "memorybench.records",
        "pydantic",
    }
    assert not loaded & records, sorted(loaded & records)
    # `auto` resolves from the local models' specs: the server's process and HTTP code wait for a run
    assert "memorybench.llm.local.server" not in loaded and "urllib.request" not in loaded


def test_help_imports_no_hydra() -> None:
    loaded = _top_level_modules("--help")
    assert not loaded & {*HEAVY, "hydra", "omegaconf", "pydantic"}


@pytest.fixture(scope="module")
def pack(tmp_path_factory) -> Path:
    """A reader pack of five LoCoMo questions, two of category 1 (the scripted server)."""
    from memorybench.testing.scripted_server import ScriptedOpenAIServer

    root = tmp_path_factory.mktemp("lazy")
    with ScriptedOpenAIServer() as server:
        done = cli_in_process(
            [
                "qa",
                *scripted_reader(server.base_url),
                "max_questions=5",
                f"paths.packs={root / 'packs'}",
                f"paths.cache={root / 'cache'}",
                "name=lazy",
            ],
            cwd=root,
        )
    assert done.returncode == 0, done.stderr
    (found,) = (root / "packs" / "lazy" / "runs").iterdir()
    return found


#: what reading a pack never needs: Hydra (a plugin that stores its config schema when
#: discovered imported it), numpy (LoCoMo's category-1 mean is `locomo.numpy_mean`), the
#: memory methods' build machinery, the Codex harness, and a plugin's config or method
NOT_FOR_READING = ("hydra", "numpy", "memorybench.config", "memorybench.memory._context", "memorybench.answer.agent.codex")


def _reading_leaks(loaded: set[str]) -> list[str]:
    plugin_parts = [m for m in loaded if m.startswith("mb_") and m.rsplit(".", 1)[-1] in ("_config", "_core")]
    return sorted({*(loaded & {*NOT_FOR_READING, *HEAVY}), *plugin_parts})


def test_show_imports_no_hydra_numpy_or_plugin_config(pack: Path) -> None:
    qid = json.loads((pack / "predictions.jsonl").open().readline())["question_id"]
    loaded = _modules("show", str(pack), qid)
    assert _reading_leaks(loaded) == [] and "omegaconf" not in loaded, _reading_leaks(loaded)
    assert "memorybench.pack.autorater_schemas" not in loaded  # no judge in this pack: no judge record read


def test_verify_imports_no_hydra_numpy_or_plugin_config(pack: Path) -> None:
    """verify loads the record modules up to the one that declares each schema id the pack
    holds (records.SCHEMA_MODULES in order): a reader pack's rows need no Codex record. It
    recomputes the run id from config.resolved.yaml read as plain data
    (`pack.resolved_config`), and looks the answerer and memory classes up with their modules
    naming OmegaConf's types only: no OmegaConf."""
    loaded = _modules("verify", str(pack))
    assert _reading_leaks(loaded) == [], _reading_leaks(loaded)
    assert "omegaconf" not in loaded
    assert "regex" not in loaded  # its texts are ASCII: `re` places the same word boundaries
    assert "memorybench.memory._records" in loaded and "memorybench.answer.agent._records" not in loaded


def test_an_unknown_schema_id_loads_every_record_module() -> None:
    """A row of an id no module declared so far loads the rest, and the plugins, before it is
    called unknown (with the closest id of all of them)."""
    probe = """
import json, sys
from memorybench import records
known = records.record_type("prediction.v1").__module__
before = "memorybench.answer.agent._records" in sys.modules
try:
    records.record_type("agent_traec.v1")
except records.SchemaError as e:
    error = str(e)
print(json.dumps({"known": known, "before": before, "after": "memorybench.answer.agent._records" in sys.modules,
                  "plugins": records._loaded, "error": error}))
"""
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {
        "known": "memorybench.pack.schemas",
        "before": False,
        "after": True,
        "plugins": True,
        "error": "unknown schema 'agent_traec.v1'",
    }


def _all_modules(package: str) -> None:
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        importlib.import_module(info.name)


#: the packages whose modules register each group's built-in components
_PACKAGES = {
    "memory": ("memorybench.memory",),
    "answerer": ("memorybench.answer",),
    "embedder": ("memorybench.embed",),
    "judge": ("memorybench.score", "memorybench.benchmarks"),
}


def test_every_registered_component_is_named_by_its_yaml() -> None:
    """The registries of the config groups and the schema nodes Hydra reads are derived from
    the YAMLs (each names its module in its defaults list), never kept by hand: each YAML's
    module registers the component its YAML names, and importing every module of the
    packages registers no component and stores no schema node that no YAML names (a module
    without its YAML fails here). A registry whose names are values (`embedder.provider`) may
    hold more values than its YAMLs use, registered by a module its YAMLs name."""
    for registry in (MEMORY, ANSWERERS, EMBEDDERS, JUDGES):
        configured = {name: found.module for name, found in registry.configured().items()}
        assert configured, registry.kind
        for name in configured:
            registry.get(name)  # the module the YAML names is imported and registers `name`
            assert registry.module_of(name).split(".")[0] == "memorybench", (registry.kind, name)
        for package in _PACKAGES[registry.group]:
            _all_modules(package)
        registered = {name: e.module for name, e in registry._entries.items() if e.module.startswith("memorybench.")}
        unnamed = set(registered) - set(configured) - set(registry.unlisted)
        if registry.key == "name":
            assert not unnamed, f"{registry.kind}s registered with no conf/{registry.group}/ YAML: {sorted(unnamed)}"
        else:
            assert {registered[n] for n in unnamed} <= set(configured.values()), (registry.kind, sorted(unnamed))
    repo = ConfigStore.instance().repo
    derived = schema_modules()
    for group in ("memory", "answerer"):
        stored = {
            k.removesuffix("_schema.yaml")
            for k in repo[group].keys()
            if k.endswith("_schema.yaml") and _node_module(group, k).startswith("memorybench.")
        }
        assert stored and stored <= set(derived[group]), (group, sorted(stored - set(derived[group])))


def _node_module(group: str, key: str) -> str:
    from omegaconf import OmegaConf

    return str(getattr(OmegaConf.get_type(ConfigStore.instance().repo[group][key].node), "__module__", ""))


def test_locomo_f1_stems_with_nltks_porter_without_loading_nltk() -> None:
    """LoCoMo's F1 needs NLTK's PorterStemmer only: its two modules load without the rest of
    NLTK (scipy and all), the rules are NLTK's own, and NLTK loads whole afterwards as before."""
    probe = """
import json, sys
from memorybench.benchmarks.locomo.score import locomo_score, _stemmer
words = ["running", "happiness", "generously", "caresses", "ponies", "adjustable", "relational", "agreed"]
ours = [_stemmer().stem(w) for w in words]
score = locomo_score("She went running in Lisbon", "running Lisbon", 4)
loaded = sorted(m for m in sys.modules if m == "nltk" or m.startswith("nltk.") or m == "scipy")
import nltk
from nltk.stem import PorterStemmer
print(json.dumps({"loaded": loaded, "same": ours == [PorterStemmer().stem(w) for w in words], "score": score,
                  "whole": hasattr(nltk, "word_tokenize")}))
"""
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["loaded"] == [] and result["same"] and result["whole"] and result["score"] > 0.5


def test_the_stemmer_loads_once_from_many_threads() -> None:
    """The report and the notebooks stem from several threads at once: none may meet another's
    placeholder parents (`nltk.__spec__ is None` before the lock)."""
    probe = """
import json, threading
from memorybench.benchmarks.locomo import score as locomo
errors, classes = [], set()
def go():
    try:
        for _ in range(50):
            classes.add(locomo.porter_class())
    except Exception as e:
        errors.append(repr(e))
threads = [threading.Thread(target=go) for _ in range(16)]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps({"errors": errors[:3], "classes": len(classes)}))
"""
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["errors"] == [] and result["classes"] >= 1
