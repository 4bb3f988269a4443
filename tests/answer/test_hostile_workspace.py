"""The harness after the agent: every read, copy, restore and delete of a workspace follows no link.

Issue 19 item 4. An agent may leave anything in its workspace: memory/notes.md as a link
to the dataset, sessions/ as a link to a host folder, a FIFO, a hard link to a host file,
a huge file, names with newlines. The harness functions are driven here on workspaces
built that way by the test; a sentinel tree outside the workspace is hashed before and
after, and no gold-like text may reach the notes. Two end-to-end cases run the real
`codex` binary with a scripted model whose shell calls plant the links.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import pytest
from test_codex import MINI, agent, rows, view_of

from memorybench.answer.agent._records import AgentTrace, AgentTraceV1
from memorybench.answer.agent._safe_fs import remove_tree, walk
from memorybench.answer.agent._workspace import (
    NOTES,
    NOTES_MAX_BYTES,
    audit,
    copy_workspace,
    fingerprint,
    read_notes,
    restore,
    write_notes,
    write_workspace,
)
from memorybench.benchmarks.locomo.data import load_locomo
from memorybench.errors import UserError
from memorybench.records import parse_record
from memorybench.testing.scripted_responses import (
    Message,
    ScriptedResponsesServer,
    Shell,
    function_outputs,
    is_follow_up,
    last_user_text,
)

GOLD = "GOLD-7f3a Caroline researched adoption agencies in Zurich"


# -- helpers -------------------------------------------------------------------------
@pytest.fixture()
def host(tmp_path: Path) -> Path:
    """A host folder outside every workspace: a gold-like file and a folder shaped like sessions/."""
    root = tmp_path / "host"
    (root / "sessions").mkdir(parents=True)
    (root / "gold.json").write_text(json.dumps({"answer": GOLD}), "utf-8")
    (root / "sessions" / "session_1.md").write_text("host file, not a session\n", "utf-8")
    (root / "sessions" / "keep.txt").write_text("keep me\n", "utf-8")
    return root


def tree_hash(root: Path) -> str:
    """Names, kinds, link targets and contents of everything under `root`, nothing followed."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root, followlinks=False)):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            h.update(os.fsencode(p.relative_to(root)) + b"\0")
            if p.is_symlink():
                h.update(b"L" + os.fsencode(os.readlink(p)))
            elif p.is_file():
                h.update(b"F" + p.read_bytes())
            else:
                h.update(b"D")
    return h.hexdigest()


@pytest.fixture()
def view():
    return view_of(load_locomo(MINI)[0])


def workspace(tmp_path: Path, view, *, sessions: bool = True, notes: str | None = "- a note\n") -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "scratch" / "conversations" / view.sample_id
    return folder, write_workspace(folder, view, sessions=sessions, notes=notes)


def symlink(link: Path, target: Path | str) -> None:
    """Put a symlink at `link` in place of what is there, as an agent's `rm -rf; ln -s` would."""
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.is_dir():
        remove_tree(link, within=link.parent)
    link.symlink_to(target)


def trace_json(findings: list[str], restored: list[str]) -> str:
    """The findings in a real trace row, serialized as the journal writes it (UTF-8 JSON)."""
    row = {
        "schema": "agent_trace.v2",
        "sample_id": "s",
        "phase": "answer",
        "mode": "m",
        "persist": True,
        "sandbox": "workspace-write",
        "model": "m",
        "provider": "p",
        "base_url": "u",
        "codex_version": "v",
        "status": "completed",
        "answer": "",
        "wall_s": 0.0,
        "timeout_s": 1.0,
        "started_at": "t",
        "ended_at": "t",
        "agent_task_sha256": "x",
        "task": {"template": "t", "template_sha256": "x", "slots": {}},
        "workspace_restored": restored,
        "workspace_findings": findings,
    }
    text = json.dumps(parse_record(row).row(), ensure_ascii=False)
    text.encode("utf-8")  # a lone surrogate of an undecodable name would fail here
    return text


# -- notes -----------------------------------------------------------------------------
def test_notes_made_a_link_to_a_host_file_are_not_read(tmp_path, view, host):
    folder, files = workspace(tmp_path, view)
    before = tree_hash(host)
    symlink(folder / NOTES, host / "gold.json")
    read = read_notes(folder)
    assert read.text == "" and GOLD not in "".join(read.findings)
    (finding,) = read.findings
    assert finding.startswith(f"{NOTES}: a symlink to {host / 'gold.json'}, not a regular file; not read")
    assert audit(folder, files, notes=True) == [
        f"{NOTES}: the harness made a file here, the agent left a symlink to {host / 'gold.json'}"
    ]
    # writing the notes replaces the link; the file it pointed to is untouched
    write_notes(folder, "- fresh\n")
    assert not (folder / NOTES).is_symlink() and read_notes(folder).text == "- fresh\n"
    assert tree_hash(host) == before


def test_the_memory_folder_made_a_link_to_a_host_folder_is_not_read(tmp_path, view, host):
    folder, files = workspace(tmp_path, view)
    (host / "notes.md").write_text(GOLD, "utf-8")
    before = tree_hash(host)
    symlink(folder / "memory", host)
    read = read_notes(folder)
    assert read.text == "" and read.findings[0].startswith(f"memory: a symlink to {host}, not a folder; not read")
    assert any(f.startswith("memory: the harness made a folder here") for f in audit(folder, files, notes=True))
    assert restore(folder, files) == ["memory"]  # the link goes, an empty memory/ comes back
    assert (folder / "memory").is_dir() and not (folder / "memory").is_symlink() and read_notes(folder).text == ""
    assert tree_hash(host) == before


def test_a_fifo_as_notes_does_not_block_any_harness_step(tmp_path, view):
    folder, files = workspace(tmp_path, view)
    (folder / NOTES).unlink()
    os.mkfifo(folder / NOTES)
    results: dict[str, object] = {}

    def steps() -> None:
        results["read"] = read_notes(folder)
        results["audit"] = audit(folder, files, notes=True)
        results["fingerprint"] = fingerprint(folder, skip="none")
        results["copy"] = copy_workspace(folder, tmp_path / "scratch" / "questions" / "q")
        results["restore"] = restore(folder, files)

    worker = threading.Thread(target=steps, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # unblock it before failing, so the test run itself does not hang
        os.close(os.open(folder / NOTES, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(5)
        pytest.fail("a harness step blocked on a FIFO")
    assert results["read"].text == "" and "a FIFO, not a regular file" in results["read"].findings[0]
    assert results["audit"] == [f"{NOTES}: the harness made a file here, the agent left a FIFO"]
    assert results["fingerprint"][NOTES] == "FIFO"
    assert results["copy"] == [f"{NOTES}: a FIFO, not a regular file; not copied"]
    assert not (tmp_path / "scratch" / "questions" / "q" / NOTES).exists()
    assert results["restore"] == [NOTES] and not (folder / NOTES).exists()  # restore keeps regular notes only


def test_a_hard_link_to_a_host_file_is_refused_but_one_inside_the_workspace_is_not(tmp_path, view, host):
    folder, files = workspace(tmp_path, view)
    before = tree_hash(host)
    (folder / NOTES).unlink()
    os.link(host / "gold.json", folder / NOTES)
    read = read_notes(folder)
    assert read.text == "" and "a hard link to a file outside the workspace (2 names)" in read.findings[0]
    assert audit(folder, files, notes=True) == [f"{NOTES}: a hard link to a file outside the workspace (2 names, 1 inside)"]
    assert restore(folder, files) == [NOTES]
    assert tree_hash(host) == before and os.stat(host / "gold.json").st_nlink == 1
    # the agent's own second name for its notes is no finding
    write_notes(folder, "- mine\n")
    os.link(folder / NOTES, folder / "memory" / "backup.md")
    assert read_notes(folder).text == "- mine\n" and audit(folder, files, notes=True) == []


def test_oversized_notes_are_cut_at_the_bound_with_a_finding(tmp_path, view):
    folder, _ = workspace(tmp_path, view)
    size = 50 * 1024 * 1024
    with open(folder / NOTES, "wb") as f:  # "é" is 2 bytes: the bound falls inside one
        f.write(b"x" + "é".encode() * ((size - 1) // 2))
    read = read_notes(folder)
    assert len(read.text.encode("utf-8")) <= NOTES_MAX_BYTES and read.text.startswith("xéé") and "\ufffd" not in read.text
    assert read.findings == [
        f"{NOTES}: {os.path.getsize(folder / NOTES)} bytes; only the first {NOTES_MAX_BYTES} were kept as the notes"
    ]


# -- restore -----------------------------------------------------------------------------
def test_restore_never_writes_into_a_host_folder_linked_as_sessions(tmp_path, view, host):
    folder, files = workspace(tmp_path, view)
    before = tree_hash(host)
    symlink(folder / "sessions", host / "sessions")
    symlink(folder / "INDEX.md", host / "gold.json")
    findings = audit(folder, files, notes=True)
    assert findings == [
        f"INDEX.md: the harness made a file here, the agent left a symlink to {host / 'gold.json'}",
        f"sessions: the harness made a folder here, the agent left a symlink to {host / 'sessions'}",
    ]
    restored = restore(folder, files)
    assert tree_hash(host) == before
    assert restored == sorted(["INDEX.md", "sessions", *(r for r in files if r.startswith("sessions/"))])
    assert not (folder / "sessions").is_symlink() and not (folder / "INDEX.md").is_symlink()
    for rel, text in files.items():
        assert (folder / rel).read_text("utf-8") == text
    assert audit(folder, files, notes=True) == [] and restore(folder, files) == []


def test_restore_puts_back_files_turned_into_folders_and_removes_agent_links(tmp_path, view, host):
    folder, files = workspace(tmp_path, view)
    before = tree_hash(host)
    (folder / "sessions" / "session_1.md").unlink()
    (folder / "sessions" / "session_1.md").mkdir()
    (folder / "sessions" / "session_1.md" / "inner").write_text("x")
    (folder / "memory" / "data").symlink_to(host)
    (folder / "out").symlink_to(host / "gold.json")
    assert audit(folder, files, notes=True) == [
        f"memory/data: the agent made a symlink to {host}",
        f"out: the agent made a symlink to {host / 'gold.json'}",
        "sessions/session_1.md: the harness made a file here, the agent left a folder",
    ]
    assert restore(folder, files) == ["memory/data", "out", "sessions/session_1.md"]
    assert (folder / "sessions" / "session_1.md").read_text("utf-8") == files["sessions/session_1.md"]
    assert not (folder / "memory" / "data").exists() and not os.path.lexists(folder / "out")
    assert read_notes(folder).text == "- a note\n" and tree_hash(host) == before


def test_names_with_newlines_or_undecodable_bytes_break_nothing(tmp_path, view):
    folder, files = workspace(tmp_path, view)
    for where in (folder, folder / "sessions", folder / "memory"):
        (where / "evil\nname.md").write_text("x")
        (where / "two\nlines").mkdir()
    odd = os.path.join(os.fsencode(folder / "sessions"), b"\xff\xfe.md")
    with open(odd, "wb") as f:
        f.write(b"y")
    os.symlink(b"/tmp/\nlink", os.path.join(os.fsencode(folder), b"l\nink"))
    prints = fingerprint(folder)
    assert prints["evil\nname.md"] == hashlib.sha256(b"x").hexdigest() and "sessions/evil\nname.md" in prints
    findings = audit(folder, files, notes=True)
    assert findings == ["'l\\nink': the agent made a symlink to '/tmp/\\nlink'"]
    restored = restore(folder, files)
    assert restored == [
        "'evil\\nname.md'",
        "'l\\nink'",
        "'sessions/\\udcff\\udcfe.md'",
        "'sessions/evil\\nname.md'",
        "'sessions/two\\nlines'",
        "'two\\nlines'",
    ]
    assert all("\n" not in r for r in restored + findings)
    assert (folder / "memory" / "evil\nname.md").is_file()  # memory/ is the agent's
    assert sorted(os.listdir(folder / "sessions")) == sorted(Path(r).name for r in files if r.startswith("sessions/"))
    trace_json(findings, restored)


# -- copy and delete ---------------------------------------------------------------------
def test_copy_workspace_copies_no_link(tmp_path, view, host):
    folder, files = workspace(tmp_path, view)
    (folder / "memory" / "gold.json").symlink_to(host / "gold.json")
    (folder / "memory" / "host").symlink_to(host)
    target = tmp_path / "scratch" / "questions" / "q-0"
    findings = copy_workspace(folder, target)
    assert findings == [
        f"memory/gold.json: a symlink to {host / 'gold.json'}, not a regular file; not copied",
        f"memory/host: a symlink to {host}, not a regular file; not copied",
    ]
    copied = walk(target)
    assert all(e.kind in ("file", "folder") for e in copied.values())
    assert set(copied) == {*files, "sessions", "memory", NOTES}
    assert GOLD not in "".join((target / rel).read_text() for rel, e in copied.items() if e.kind == "file")


def test_deletion_follows_no_link_and_stays_inside_the_scratch_folder(tmp_path, view, host):
    scratch = tmp_path / "scratch"
    folder, _ = workspace(tmp_path, view)
    before = tree_hash(host)
    (folder / "sessions" / "host").symlink_to(host)
    (folder / "memory" / "gold.json").symlink_to(host / "gold.json")
    os.link(host / "gold.json", folder / "memory" / "hard.json")
    locked = folder / "memory" / "locked"
    locked.mkdir()
    (locked / "f").write_text("x")
    locked.chmod(0)
    remove_tree(folder, within=scratch)
    assert not os.path.lexists(folder) and tree_hash(host) == before
    # a workspace path that is itself a link: the link goes, its target stays
    (scratch / "questions").mkdir()
    (scratch / "questions" / "q-1").symlink_to(host / "sessions")
    remove_tree(scratch / "questions" / "q-1", within=scratch)
    assert not os.path.lexists(scratch / "questions" / "q-1") and tree_hash(host) == before
    remove_tree(scratch / "questions" / "never-made", within=scratch)  # nothing there: nothing to do
    # a name that leads outside the scratch folder is refused, whether by `..` or by a link on the way
    (scratch / "elsewhere").symlink_to(host)
    for bad in (scratch / "questions" / ".." / ".." / "host" / "sessions", scratch / "elsewhere" / "sessions"):
        with pytest.raises(UserError, match="refusing to delete .*: it is not inside the run's scratch folder"):
            remove_tree(bad, within=scratch)
    assert tree_hash(host) == before


def test_folders_replaced_by_links_to_the_root_touch_nothing_there(tmp_path, view):
    folder, files = workspace(tmp_path, view)
    root_before = sorted(os.listdir("/"))
    assert not os.path.lexists("/session_1.md") and not os.path.lexists("/INDEX.md")
    symlink(folder / "sessions", "/")
    symlink(folder / "memory", "/")
    assert read_notes(folder).findings == ["memory: a symlink to /, not a folder; not read: the notes are taken as empty"]
    assert "sessions: the harness made a folder here, the agent left a symlink to /" in audit(folder, files, notes=True)
    assert "sessions/session_1.md" not in fingerprint(folder)
    restore(folder, files)
    assert (folder / "sessions" / "session_1.md").read_text("utf-8") == files["sessions/session_1.md"]
    symlink(folder / "sessions", "/")
    remove_tree(folder, within=tmp_path / "scratch")
    assert not os.path.lexists(folder)
    assert sorted(os.listdir("/")) == root_before and not os.path.lexists("/session_1.md")


def test_trace_versions_v1_rows_stay_readable_and_v2_carries_the_findings():
    v2 = json.loads(trace_json(["memory/notes.md: a FIFO"], []))
    assert (
        v2["schema"] == "agent_trace.v2" and list(v2)[0] == "schema" and v2["workspace_findings"] == ["memory/notes.md: a FIFO"]
    )
    old = {**v2, "schema": "agent_trace.v1"}
    old.pop("workspace_findings")
    assert type(parse_record(old)) is AgentTraceV1 and type(parse_record(v2)) is AgentTrace


# -- end to end: the real codex binary, scripted shell calls plant the links --------------
def test_notes_only_ingest_that_links_notes_to_a_host_file_gives_the_questions_no_gold(tmp_path, host):
    before = tree_hash(host)
    gold_file = host / "gold.json"

    def responder(body):
        task = last_user_text(body)
        ingest = "Read every session" in task
        if is_follow_up(body):
            return Message("done" if ingest else "not mentioned")
        if ingest:  # the host path does not exist inside the agent's root: the link dangles there
            return Shell(f"ln -sf {gold_file} memory/notes.md; ls -la memory")
        return Shell("ls -la . memory; cat memory/notes.md")

    with ScriptedResponsesServer(responder=responder) as server:
        with agent(tmp_path, server, "answerer.mode=notes_only") as (answerer, pack, conversations):
            answerer.start_conversation(view_of(conversations[0]))
            answerer.answer(conversations[0].questions[0].asked(), "")
        outputs = [o for body in server.requests for o in function_outputs(body)]
    ingest_listing, question_output = outputs
    assert f"notes.md -> {gold_file}" in ingest_listing  # the agent did plant the link
    assert GOLD not in question_output and "->" not in question_output
    assert pack.path("agent/notes/mini-1.ingest.md").read_text() == ""
    assert GOLD not in pack.path("agent/workspaces/mini-1/questions/INDEX.md").read_text()
    ingest, question = rows(pack.path("agent/traces.jsonl"))
    assert ingest["phase"] == "ingest" and ingest["workspace_findings"] == [
        f"{NOTES}: the harness made a file here, the agent left a symlink to {gold_file}",
        f"{NOTES}: a symlink to {gold_file}, not a regular file; not read: the notes are taken as empty",
    ]
    assert question["workspace_findings"] == []
    comparison = json.loads(pack.path("agent/comparison.json").read_text())
    assert any(r.startswith("workspace findings in 1 process(es)") for r in comparison["reasons"])
    assert "workspace findings in 1 process(es)" in pack.path("agent/COMPARISON.md").read_text()
    for path in pack.root.rglob("*"):
        if path.is_file():
            assert GOLD not in path.read_text("utf-8", errors="replace"), path
    assert tree_hash(host) == before


def test_persist_agent_that_links_sessions_to_a_host_folder_gets_it_restored_not_written(tmp_path, host):
    before = tree_hash(host)
    # (the CLI refuses `rm -rf`; a move does the same here)
    plant = f"mv sessions old && ln -s {host / 'sessions'} sessions && ln -sf {host / 'gold.json'} memory/notes.md"
    script = iter(
        [
            Shell(plant),
            Message("pottery"),
            Shell("ls -la; cat sessions/session_1.md; cat memory/notes.md"),
            Message("20 May 2023"),
        ]
    )
    with ScriptedResponsesServer(responder=lambda body: next(script)) as server:
        with agent(tmp_path, server, "answerer.persist=true") as (answerer, pack, conversations):
            answerer.start_conversation(view_of(conversations[0]))
            q0, q1 = conversations[0].questions[:2]
            answerer.answer(q0.asked(), "")
            answerer.answer(q1.asked(), "")
        (second,) = function_outputs(server.requests[3])
    assert tree_hash(host) == before
    assert "[D1:1]" in second and "host file, not a session" not in second and GOLD not in second
    first, again = rows(pack.path("agent/traces.jsonl"))
    assert first["workspace_findings"] == [
        f"{NOTES}: the harness made a file here, the agent left a symlink to {host / 'gold.json'}",
        f"sessions: the harness made a folder here, the agent left a symlink to {host / 'sessions'}",
        f"{NOTES}: a symlink to {host / 'gold.json'}, not a regular file; not read: the notes are taken as empty",
    ]
    assert {"old", "sessions", NOTES} <= set(first["workspace_restored"])
    assert again["workspace_findings"] == [] and again["notes_before_sha256"] == first["notes_after_sha256"]
    assert pack.path(f"agent/notes/{q0.question_id}.md").read_text() == ""
