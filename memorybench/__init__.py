"""memorybench: reproducible long-term conversational memory experiments on LoCoMo."""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

_PACKAGE_DIR = Path(__file__).resolve().parent

#: The folder above the package: the checkout in an editable install (package.json and
#: node_modules live there), site-packages in an installed wheel.
PROJECT_ROOT = _PACKAGE_DIR.parent


def _data_dir(name: str) -> Path:
    """The `conf` or `prompts` folder this memorybench reads.

    A wheel carries the checkout's top-level `conf/` and `prompts/` inside the package as
    `memorybench/_conf` and `memorybench/_prompts` (pyproject.toml's package-dir maps them);
    an editable install has neither and reads the checkout's folders.
    """
    packaged = _PACKAGE_DIR / f"_{name}"
    return packaged if packaged.is_dir() else PROJECT_ROOT / name


#: Hydra's config folder: one folder per group, one YAML per option (DESIGN.md 2).
CONF_DIR = _data_dir("conf")
#: Our prompt templates, versioned by file name (readers/qa_v1.txt, writers/...).
PROMPTS_DIR = _data_dir("prompts")
