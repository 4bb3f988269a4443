"""The package's layers point down: an import scan of every module (function-level
imports included) against the layer table of docs/design.md.

Registries find components with importlib by name (`memorybench/registry.py`), which is
no import statement and so no arrow: that is how a low layer reaches the components it
lists without depending on them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "memorybench"

#: layer of each top-level part of the package, low to high (docs/design.md, "Layers")
LAYERS: dict[str, int] = {
    # 0: the ground: no memorybench imports but each other
    "errors": 0,
    "records": 0,
    "stats": 0,
    "hashing": 0,
    "names": 0,
    "_process": 0,
    "provenance": 0,
    "registry": 0,
    "lazy": 0,
    "plugins": 0,
    "secrets": 0,
    "help": 0,
    "progress": 0,
    "fs": 0,
    # 1: data and the benchmarks it belongs to, models, scores, packs and where they are stored
    "data": 1,
    "benchmark": 1,
    "storage": 1,
    "templates": 1,
    "config": 1,
    "run_id": 1,
    "llm": 1,
    "score": 1,
    "pack": 1,
    "testing": 1,
    # 2: what a run is made of
    "memory": 2,
    "embed": 2,
    "answer": 2,
    "validate": 2,
    # 3: stages, the viewers, and the comparison layer they read (viewers/view and show import compare/blame)
    "compare": 3,
    "stages": 3,
    "viewers": 3,
    "plan": 3,
    "plan_questions": 3,
    "estimate": 3,
    # 4: the top: command line, Hydra app, tracking, the cloud
    "cli": 4,
    "hydra_app": 4,
    "sweep_table": 4,
    "tracking": 4,
    "cloudrun": 4,
    "completion": 4,
    "board": 4,
    # 5: the benchmarks, a package each: they may use all of the above, and nothing imports
    # them; the core finds them by name and asks their records (memorybench.benchmark)
    "benchmarks": 5,
}
#: within layer 1, the order of the bottom rooms (an import may only point to an equal or lower one)
BOTTOM = ["benchmark", "data", "storage", "templates", "config", "run_id", "llm", "score", "pack", "testing"]


def part_of(module: str) -> str:
    return module.split(".")[1] if module.count(".") else "__init__"


def imports_of(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text("utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return [(line, name) for line, name in found if name == "memorybench" or name.startswith("memorybench.")]


def modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        out.append((".".join(rel.parts).removesuffix(".__init__"), path))
    return out


def test_every_part_has_a_layer():
    parts = {part_of(name) for name, _ in modules()} - {"__init__"}
    assert parts <= set(LAYERS), f"add {sorted(parts - set(LAYERS))} to LAYERS and to docs/design.md"


def test_no_import_points_up():
    upward = []
    for name, path in modules():
        src = part_of(name)
        if src == "__init__":
            continue
        for line, target in imports_of(path):
            dst = part_of(target)
            if dst == "__init__" or dst == src:
                continue
            if LAYERS[dst] > LAYERS[src] or (LAYERS[dst] == LAYERS[src] == 1 and BOTTOM.index(dst) > BOTTOM.index(src)):
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} {src} -> {target}")
    assert not upward, "imports that point up:\n" + "\n".join(upward)


# lines as `ruff format` lays them out (.ci/run checks it): the limit was 600 in the denser layout
# before the format commit, where the same modules took about a fifth fewer lines
@pytest.mark.parametrize("limit", [750])
def test_no_module_is_over_the_limit(limit):
    long = {str(p.relative_to(PACKAGE.parent)): n for _, p in modules() if (n := len(p.read_text("utf-8").splitlines())) > limit}
    assert not long, f"modules over {limit} lines (split them by concept): {long}"
