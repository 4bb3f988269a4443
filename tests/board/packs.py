"""The board's packs for its tests: the pinned peers imported as the issue names them, and two own
runs on the scripted server over the pinned LoCoMo file, judged by two scripted judges.

Peers (../shared/pins/peers, PINS.md): memobase (`mem0_evals`), Zep (`zep`), Honcho
(`locomo_task_eval`), CORE (no CORE file is pinned: its released shape made from the pinned data,
as tests/stages/test_import_core.py makes it), a mem0 fork's output (`memos_eval`: the
locomo-audit's deliberately wrong answers, MemOS's evaluation format) and AMB's Cognee file
(`amb_locomo`, a partial pack of one conversation). The second own run's reader "answers" as a
model named `<img src=x onerror=...>` with a reply holding `</script><script>`: hostile strings
from imported files, which the board and the viewer must keep as text. Made once per process.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

from conftest import LOCOMO, PINS, scripted_reader
from tracking.pack_factory import add_autorater

from memorybench.cli import main
from memorybench.stages.import_results import import_results
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

PEERS = PINS / "peers"
#: a model name and a reply that would run script if a page ever took them for markup
HOSTILE_MODEL = '<img src=x onerror="window.__pwned=1">'
HOSTILE_REPLY = "</script><script>window.__pwned=2</script><img src=y onerror=window.__pwned=3>"
#: the two scripted judges: the first counts any overlap as CORRECT, the second needs LoCoMo F1 > 0.5
JUDGES = {"lenient-judge": 0.0, "strict-judge": 0.5}

_MADE: dict[str, dict[str, Path]] = {}


def _own(packs: Path, cache: Path, model: str, hostile: bool) -> Path:
    def answer(body: dict) -> Reply:  # plumbing: a few right by chance, never gold
        text = body["messages"][-1]["content"]
        if hostile:
            return Reply(HOSTILE_REPLY if len(text) % 5 == 0 else "May 2023", model=HOSTILE_MODEL)
        return Reply("Not mentioned in the conversation" if len(text) % 3 else "May 2023")

    with ScriptedOpenAIServer(responder=answer) as server:
        args = ["qa", *scripted_reader(server.base_url, model), "memory=session_summaries", f"dataset.path={LOCOMO}"]
        assert main([*args, f"paths.packs={packs}", f"paths.cache={cache}", "name=own"]) == 0
    return next(p for p in (packs / "own" / "runs").iterdir() if f"-{model}-" in p.name)


def _core(folder: Path) -> list[Path]:
    from stages.test_import_core import _core_files

    paths, _, _ = _core_files(folder, json.loads(LOCOMO.read_text("utf-8")))
    return paths


def board_packs() -> dict[str, Path]:
    """name -> pack folder, all under one packs root (`["root"]`); each test copies what it changes."""
    if "packs" not in _MADE:
        made = Path(tempfile.mkdtemp(prefix="memorybench-board-"))
        atexit.register(shutil.rmtree, made, True)
        root = made / "packs"
        out = {
            "memobase": import_results([PEERS / "memobase_eval_0710_3000.json"], "mem0_evals", name="memobase", packs=root),
            "zep": import_results(
                [PEERS / "zep_locomo_grades.json", PEERS / "zep_locomo_responses.json"], "zep", name="zep", packs=root
            ),
            "honcho": import_results(
                [PEERS / "locomo10_qa_honcho_base.json", PEERS / "locomo10_qa_stats_honcho_base.json"],
                "locomo_task_eval",
                model_key="honcho",
                name="honcho",
                packs=root,
            ),
            "core": import_results(_core(made / "core"), "core", name="core", packs=root),
            "mem0-fork": import_results(
                [PINS / "locomo-audit" / "ap_v1_specific_wrong_scored.json"], "memos_eval", name="memos-fork", packs=root
            ),
            "amb-cognee": import_results(
                [PEERS / "amb" / "locomo_cognee_rag_locomo10.json.gz"],
                "amb_locomo",
                name="amb-cognee",
                packs=root,
                allow_partial=True,
            ),
        }
        found = {name: result.pack_root for name, result in out.items()}
        found["own"] = _own(root, made / "cache", "scripted-a", hostile=False)
        found["own-hostile"] = _own(root, made / "cache", "scripted-b", hostile=True)
        for name in ("own", "own-hostile", "memobase"):  # three packs under two scripted judges
            for model, threshold in JUDGES.items():
                add_autorater(found[name], passes=1, model=model, threshold=threshold)
        found["root"] = root
        _MADE["packs"] = found
    return _MADE["packs"]
