"""Where MemOS lives: its own environment, found without importing it.

MemOS 2.0.33 (PyPI `MemoryOS`, import name `memos`) cannot be installed into memorybench's
environment: it pins `openai<2`, `fastapi<0.116` (so `starlette<0.47`), `transformers<5`
(so `huggingface-hub<1`, `tokenizers<0.23`), and memorybench needs `openai>=3.50`
(README.md of this plugin). So it gets its own virtual environment, `plugins/memos/.venv`
(made by `plugins/memos/install.sh`, ignored by git), and memorybench runs its worker
script there (`mb_memos._worker`).

`LIBRARY` says so (`memorybench.memory.venv_worker.VenvLibrary`, what every library in an
environment of its own shares):

- `python()`: the MemOS environment's interpreter: `MEMORYBENCH_MEMOS_PYTHON` if set, else
  `plugins/memos/.venv/bin/python` beside this package. Not a config key: a path on one
  machine must not change the run id.
- `versions(names)`: each name's version as the MemOS environment's `*.dist-info` says,
  read without starting it; the plugin's `wrapped_versions()` (run_meta.json's
  `plugins[].wraps`, in the run id) and `check_installed` read them.
- `prompt(name)`: a prompt constant of MemOS's source (`memos/templates/...`), read from
  the file with `ast` (importing memos here is impossible: it lives in the other environment).
"""

from __future__ import annotations

import ast
from pathlib import Path

from memorybench.memory.venv_worker import VenvLibrary

LIBRARY = VenvLibrary(
    method="memos",
    title="MemOS",
    plugin_dir=Path(__file__).resolve().parents[1],
    python_env="MEMORYBENCH_MEMOS_PYTHON",
    script=Path(__file__).with_name("_worker.py"),
)
PYTHON_ENV = LIBRARY.python_env
INSTALL = LIBRARY.install
#: the distributions of the MemOS environment whose versions enter the run id (run_meta.json's
#: `plugins[].wraps`): MemOS, its vector store, its model client
WRAPPED = ("MemoryOS", "qdrant-client", "openai")
#: the module of MemOS that holds the extraction prompt its general_text memory sends
PROMPT_MODULE = ("memos", "templates", "mem_reader_prompts.py")
EXTRACT_PROMPT = "SIMPLE_STRUCT_MEM_READER_PROMPT"
python = LIBRARY.python
site_packages = LIBRARY.site_packages


def versions(names: tuple[str, ...] = WRAPPED) -> dict[str, str | None]:
    """The MemOS environment's version of each name (from its dist-info; None: not there)."""
    return LIBRARY.versions(names)


def prompt(name: str = EXTRACT_PROMPT) -> str | None:
    """The string constant `name` of MemOS's prompt module, as its source assigns it (None:
    no MemOS environment, or no such constant)."""
    site = site_packages()
    path = site.joinpath(*PROMPT_MODULE) if site else None
    if path is None or not path.is_file():
        return None
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return value if isinstance(value, str) else None
    return None
