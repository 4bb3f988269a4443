"""memorybench: reproducible long-term conversational memory experiments on LoCoMo."""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

#: The project checkout (conf/ and prompts/ live here; the package is installed editable).
PROJECT_ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = PROJECT_ROOT / "conf"
PROMPTS_DIR = PROJECT_ROOT / "prompts"
