"""Where cognee lives: its own environment, found without importing it.

cognee 1.6.5 cannot be installed into memorybench's environment: it pins `openai<3`
(through `instructor<1.15.3`, which needs `openai<3`), `pandas<3`, `huggingface-hub<1`,
`tokenizers<=0.23.0`, `onnxruntime<=1.23.2`, `websockets<16`, `filelock<4`, `gunicorn<24`,
and memorybench needs `openai>=3.50` (README.md of this plugin). So it gets its own
virtual environment, `plugins/cognee/.venv` (made by `plugins/cognee/install.sh`, ignored by
git), and memorybench runs its worker script there (`mb_cognee._worker`).

`LIBRARY` says so (`memorybench.memory.venv_worker.VenvLibrary`, what every library in an
environment of its own shares):

- `python()`: the cognee environment's interpreter: `MEMORYBENCH_COGNEE_PYTHON` if set,
  else `plugins/cognee/.venv/bin/python` beside this package. Not a config key: a path on
  one machine must not change the run id.
- `versions(names)`: each name's version as the cognee environment's `*.dist-info` says,
  read without starting it; the plugin's `wrapped_versions()` (run_meta.json's
  `plugins[].wraps`, in the run id) and `check_installed` read them.
"""

from __future__ import annotations

from pathlib import Path

from memorybench.memory.venv_worker import VenvLibrary

LIBRARY = VenvLibrary(
    method="cognee",
    title="cognee",
    plugin_dir=Path(__file__).resolve().parents[1],
    python_env="MEMORYBENCH_COGNEE_PYTHON",
    script=Path(__file__).with_name("_worker.py"),
)
PYTHON_ENV = LIBRARY.python_env
INSTALL = LIBRARY.install
#: the distributions of the cognee environment whose versions enter the run id (run_meta.json's
#: `plugins[].wraps`): cognee, its stores, its model clients
WRAPPED = ("cognee", "lancedb", "pylance", "ladybug", "litellm", "openai", "instructor", "fastembed")
python = LIBRARY.python
site_packages = LIBRARY.site_packages


def versions(names: tuple[str, ...] = WRAPPED) -> dict[str, str | None]:
    """The cognee environment's version of each name (from its dist-info; None: not there)."""
    return LIBRARY.versions(names)
