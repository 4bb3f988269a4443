"""memory=letta: Letta's own server (letta 0.11.7, SQLite) inserting and searching archival memory.

Fast tests (no server): the ways it fails to start are one line each, the server's environment
carries no key of the caller's, the masks of Letta's fixed text, its cache.

End to end (Letta's real server, its own chunking, embedding client, store and search; skipped,
with the reason, when the server's environment `plugins/letta/.venv` is not there):

- on scripted models (`embedder=hashing`, a scripted reader, the mini fixture): every embedding
  call Letta made has its row in the pack, the server opened no connection but to the recording
  endpoint, the store's `archives_agents` carries the SQLite default the plugin set (and its rows
  a real time), a reader failure then a rerun searches the committed store without inserting
  again, and verify finds nothing but, at most, chance digits inside Letta's random ids and clock
  in its database (`real_findings`: about one run in three shows one; README, "Known limits");
- on the embedded models (`local_model`): the README's smoke run, five questions of conv-26 over
  its first session, verified the same way.

Skipped, with the reason, when the plugin is not installed (`plugins/letta/install.sh`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

pytest.importorskip("mb_letta", reason="the letta plugin is not installed: plugins/letta/install.sh")

from memorybench.cli import main  # noqa: E402
from memorybench.errors import UserError  # noqa: E402
from memorybench.pack.verify import verify_pack  # noqa: E402
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer, Status  # noqa: E402
from mb_letta import _core, _process  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
MINI = FIXTURES / "mini_locomo.json"
needs_server = pytest.mark.skipif(
    not _process.DEFAULT_PYTHON.is_file(),
    reason=f"the Letta server's environment is not there ({_process.DEFAULT_PYTHON}): plugins/letta/install.sh",
)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()] if path.is_file() else []


#: a binary file's text as verify scans it (`memorybench.pack.verify.contamination._text_of`)
TEXT_RUN = re.compile(rb"[^\x00-\x08\x0b-\x1f\x7f]{4,}")


def real_findings(pack: Path) -> list[str]:
    """verify's findings, but a gold string in Letta's database that occurs only inside its random
    ids and clock (a uuid's "2022", a time's ":20" before the next column's "2026"): such a finding
    is a chance match, and the core's verify cannot tell it apart yet (README, "Known limits")."""
    out = []
    for finding in verify_pack(pack):
        path = finding.path.partition(":")[0]
        needle = re.match(r"gold answer '(.+?)' of ", finding.message)
        if finding.code == "gold.leak" and path.endswith(".letta/sqlite.db") and needle:
            text = b"\n".join(TEXT_RUN.findall((pack / path).read_bytes())).decode("utf-8", "replace")
            if needle.group(1) not in _core.mask(text).lower():
                continue
        out.append(finding.format())
    return out


def run(*args: str) -> int:
    try:
        return main(["qa", "memory=letta", *args])
    except SystemExit as e:
        return int(e.code or 0)


# -- fast ------------------------------------------------------------------------------
def test_a_missing_server_environment_is_one_line(tmp_path):
    with pytest.raises(UserError) as e:
        _process.check_server_env(tmp_path / "nowhere" / "bin" / "python")
    assert "plugins/letta/install.sh" in str(e.value) and "\n" not in str(e.value)


def test_another_letta_is_one_line(tmp_path):
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    (site / "letta-0.16.8.dist-info").mkdir(parents=True)
    with pytest.raises(UserError, match=r"written for letta 0\.11\.7 .* but letta 0\.16\.8 is installed"):
        _process.check_server_env(python)


def test_the_server_environment_carries_no_key_of_the_caller(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-caller-key")
    monkeypatch.setenv("SENTRY_DSN", "https://example.invalid/1")
    env = _process.server_env(tmp_path / "bin" / "python", tmp_path / "store", tmp_path, "http://127.0.0.1:1/v1", "mb-proxy-x")
    assert env["OPENAI_API_KEY"] == "mb-proxy-x" and "SENTRY_DSN" not in env
    assert env["HOME"] == str(tmp_path / "store") and env["COMPOSIO_DISABLE_SENTRY"] == "true"


def test_letta_s_random_text_is_masked(tmp_path):
    """Chance digits (a uuid's "2022", a clock's "2020") must not become the library's words."""
    text = (
        '{"id": "passage-202249ec-b318-4443-9bb3-117e7a6a28ee", "time": "2026-12-06 03:49:30 PM UTC+0000", '
        f'"at": "2026-12-06T15:49:20.213176", "url": "http://127.0.0.1:39165/v1", "dir": "{tmp_path}/x"}}'
    )
    masked = _core.mask(text, tmp_path)
    assert masked == (
        '{"id": "passage-<uuid>", "time": "<time> PM UTC+0000", "at": "<time>", '
        '"url": "http://127.0.0.1:<port>/v1", "dir": "<store>/x"}'
    )


def test_the_store_text_is_read_from_its_cache(tmp_path):
    python = tmp_path / "venv" / "bin" / "python"
    cache = _core.store_text_cache(python, 300)
    cache.parent.mkdir(parents=True)
    cache.write_text("cached", "utf-8")
    assert _core.store_text(python, 300) == "cached"
    assert _core.store_text_cache(python, 200) != cache  # another chunk size: another probe


# -- end to end ------------------------------------------------------------------------
@needs_server
def test_letta_end_to_end_on_scripted_models(tmp_path):
    args = [
        "reader=openai_compatible",
        "reader.model=scripted",
        "embedder=hashing",
        f"dataset.path={MINI}",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
        "name=letta",
        "max_questions=3",
    ]
    with ScriptedOpenAIServer() as reader:
        reader.script(Reply("first answer"), Status(400))
        assert run(f"reader.base_url={reader.base_url}", *args) != 0
        (pack,) = (tmp_path / "packs" / "letta" / "runs").iterdir()
        assert len(rows(pack / "predictions.jsonl")) == 1 and not (pack / "_SUCCESS").exists()
        inserted = [r for r in rows(pack / "memory/letta/embed_calls.jsonl") if r["question_id"] is None]
        assert run(f"reader.base_url={reader.base_url}", *args) == 0
    calls = rows(pack / "memory/letta/embed_calls.jsonl")
    # the rerun inserted nothing: the first run's build rows (`question_id: null`) are kept with the
    # conversation's committed memory (RunPack.resume), and no new one was written
    assert inserted and [r for r in calls if r["question_id"] is None] == inserted
    assert {r["question_id"] for r in calls if r["question_id"]} == {p["question_id"] for p in rows(pack / "predictions.jsonl")}
    (sample,) = {r["sample_id"] for r in calls}
    stored = json.loads((pack / f"memory/letta/{sample}.json").read_text("utf-8"))
    library = stored["metadata"]["library"]
    assert library["version"] == "0.11.7" and stored["items"]
    assert library["endpoint_rows"] == {"chat": 0, "embed": len(inserted)}  # every embedding call has its row
    assert all(item["item_id"].startswith(f"{sample}-s") for item in stored["items"])  # our ids, not Letta's uuids
    store = pack / "memory/library_stores/letta" / sample
    audit = rows(store / _process.AUDIT_FILE)
    assert audit and all(r["allowed"] and r["host"] == "127.0.0.1" for r in audit)
    with contextlib.closing(sqlite3.connect(store / ".letta" / "sqlite.db")) as db:
        (ddl,) = db.execute("SELECT sql FROM sqlite_master WHERE name='archives_agents'").fetchone()
        (created,) = db.execute("SELECT created_at FROM archives_agents").fetchone()
        passages = db.execute("SELECT count(*) FROM archival_passages").fetchone()[0]
    assert "DEFAULT (datetime('now'))" in ddl and "'now()'" not in ddl
    datetime.fromisoformat(created)  # what letta 0.11.7's own default could not give
    assert passages == len(stored["items"])
    assert (pack / "prompts" / _core.STORE_TEXT).is_file()
    assert real_findings(pack) == []


@needs_server
@pytest.mark.local_model
def test_letta_on_the_embedded_model(tmp_path):
    """The README's smoke run: Letta's archival memory of conv-26's first session, five
    questions answered by the embedded reader; the budget keeps its prompts short on 2 cores."""
    pins = Path(os.environ.get("MEMORYBENCH_PINS") or FIXTURES.parents[2] / "shared" / "pins")
    locomo = pins / "data" / "locomo10.json"
    if not locomo.is_file():
        pytest.fail(f"{locomo} is missing: the plugin's tests read the pinned files from ../shared/pins")
    code = run(
        "writer=local",
        "reader=local",
        "memory.max_sessions=1",
        "max_questions=5",
        "budget.max_memory_tokens=500",
        f"dataset.path={locomo}",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
        "name=lsmoke",
    )
    assert code == 0
    (pack,) = (tmp_path / "packs" / "lsmoke" / "runs").iterdir()
    assert len(rows(pack / "predictions.jsonl")) == 5
    library = json.loads((pack / "memory/letta/conv-26.json").read_text("utf-8"))["metadata"]["library"]
    assert library["passages"] > 0 and library["socket_audit"]["refused"] == []
    assert library["endpoint_rows"]["embed"] == sum(
        1 for r in rows(pack / "memory/letta/embed_calls.jsonl") if not r["question_id"]
    )
    assert real_findings(pack) == []
