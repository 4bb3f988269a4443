"""A registry that several threads ask at once (a report's worker threads ask the scorers
together): each waits for the whole discovery instead of seeing none or half of the entries."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

from memorybench.registry import Registry


def test_threads_that_ask_at_once_all_see_every_entry(tmp_path, monkeypatch):
    (tmp_path / "slow_entries.py").write_text(
        "import time\n\ndef entries():\n    time.sleep(0.3)  # a discovery that takes a while (imports)\n"
        "    return {'a': 1, 'b': 2}\n"
    )
    (tmp_path / "no_components").mkdir()
    (tmp_path / "no_components" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry("thing", "thing", package="no_components", more_builtins="slow_entries:entries")
    with ThreadPoolExecutor(8) as pool:
        seen = list(pool.map(lambda _: registry.names(), range(8)))
    assert seen == [["a", "b"]] * 8
    sys.modules.pop("slow_entries", None)
    sys.modules.pop("no_components", None)
