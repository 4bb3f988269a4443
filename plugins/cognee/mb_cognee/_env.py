"""Where cognee lives: its own environment, found without importing it.

cognee 1.6.5 cannot be installed into memorybench's environment: it pins `openai<3`
(through `instructor<1.15.3`, which needs `openai<3`), `pandas<3`, `huggingface-hub<1`,
`tokenizers<=0.23.0`, `onnxruntime<=1.23.2`, `websockets<16`, `filelock<4`, `gunicorn<24`,
and memorybench needs `openai>=3.50` (README.md of this plugin). So it gets its own
virtual environment, `plugins/cognee/.venv` (made by `plugins/cognee/install.sh`, ignored by
git), and memorybench runs its worker script there (`mb_cognee._worker`).

- `python()`: the cognee environment's interpreter: `MEMORYBENCH_COGNEE_PYTHON` if set,
  else `plugins/cognee/.venv/bin/python` beside this package. Not a config key: a path on
  one machine must not change the run id.
- `versions(names)`: each name's version as the cognee environment's `*.dist-info` says,
  read without starting it; the plugin's `wrapped_versions()` (run_meta.json's
  `plugins[].wraps`, in the run id) and `check_installed` read them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

PYTHON_ENV = "MEMORYBENCH_COGNEE_PYTHON"
PLUGIN_DIR = Path(__file__).resolve().parents[1]
DEFAULT_VENV = PLUGIN_DIR / ".venv"
INSTALL = "bash plugins/cognee/install.sh"
#: the distributions of the cognee environment whose versions enter the run id (run_meta.json's
#: `plugins[].wraps`): cognee, its stores, its model clients
WRAPPED = ("cognee", "lancedb", "pylance", "ladybug", "litellm", "openai", "instructor", "fastembed")


def python() -> Path:
    """The cognee environment's interpreter (module doc)."""
    named = os.environ.get(PYTHON_ENV)
    return Path(named) if named else DEFAULT_VENV / "bin" / "python"


def site_packages(interpreter: Path | None = None) -> Path | None:
    """The site-packages folder of the environment `interpreter` belongs to (None: none found)."""
    venv = (interpreter or python()).parent.parent
    found = sorted(venv.glob("lib/python3*/site-packages"))
    return found[0] if found else None


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def versions(names: tuple[str, ...] = WRAPPED) -> dict[str, str | None]:
    """The cognee environment's version of each name (from its dist-info; None: not there)."""
    site = site_packages()
    out: dict[str, str | None] = {n: None for n in names}
    if site is None:
        return out
    for info in site.glob("*.dist-info"):
        dist, _, rest = info.name.removesuffix(".dist-info").partition("-")
        for n in names:
            if _normal(dist) == _normal(n):
                out[n] = rest
    return out
