"""memory=memos: MemOS (PyPI `MemoryOS`, MemTensor's memory operating system) inside memorybench's protocol.

This module is what plugin discovery imports: it stays light (memorybench's registry only;
MemOS itself lives in an environment of its own and never enters this process:
`mb_memos._env`). The method is `mb_memos._core.MemosMemory`, registered lazily; its
config keys are `mb_memos._config.MemosConfig`, imported when Hydra first reads them.

- `CONFIG_DIR`: `conf/memory/memos.yaml`, searched by Hydra after memorybench's conf/.
- `wrapped_versions()`, not `WRAPS`: the wrapped distributions live in the MemOS
  environment, where importlib.metadata in memorybench's cannot see them; their versions as
  that environment's metadata says (`mb_memos._env.versions`, read without starting it)
  are run_meta.json's `plugins[].wraps` and enter the run id.
"""

from __future__ import annotations

from pathlib import Path

from memorybench.registry import MEMORY

CONFIG_DIR = Path(__file__).parent / "conf"
SCHEMA_MODULES = {"memory": {"memos": "mb_memos._config"}}
MEMORY.add("memos", "mb_memos._core:MemosMemory")


def wrapped_versions() -> dict[str, str | None]:
    """MemOS's, its vector store's and its model client's versions in the MemOS environment
    (None: not there; `memory=memos` itself stops on a missing or other MemOS with one line first)."""
    from mb_memos._env import WRAPPED, versions

    return versions(WRAPPED)
