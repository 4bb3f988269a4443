"""Agent workspaces, written without a model from what a `ConversationView` holds.

    INDEX.md                 who talks, how many sessions, one line per session file
    sessions/session_N.md    a header with the session date, then one line per turn:
                             `[D1:3] SPEAKER: TEXT [image: CAPTION]`
    memory/notes.md          the agent's notes (notes_only, or persist on)

No question, gold answer or evidence id list exists in a ConversationView, so none can
be written here (DESIGN.md 4.1). Every turn line starts with an id of the form `D1:3`, so
what an agent's command printed says which turns it read: LoCoMo's own dia_id; for a turn
whose id says more than its place (LongMemEval's `SESSION_ID:INDEX`, where the evidence
sessions' ids start with `answer_`), its place: `D<session>:<turn>`, 1-based (`shown_ids`
maps them back).

After the agent has run, the workspace is hostile (`_safe_fs`): the notes are read, the
files compared and put back, without following any link the agent left; a file that
changed type (to a link, a FIFO...) is a finding (`audit`) recorded in the agent's trace.
"""

from __future__ import annotations

import codecs
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from memorybench.answer.agent._safe_fs import (
    Entry,
    Refused,
    copy_tree,
    links_inside,
    make_dir,
    outside_link,
    read_regular,
    remove,
    show,
    walk,
    write_file,
)
from memorybench.answer.base import ConversationView
from memorybench.data.records import Session
from memorybench.hashing import sha256_bytes, sha256_text

NOTES = "memory/notes.md"
MEMORY = "memory"
#: notes beyond this are cut (a finding): a conversation's own text is ~0.1 MiB, so more is
#: no note-taking, and every later question would carry it
NOTES_MAX_BYTES = 1 << 20
#: a harness-written workspace file is a session or INDEX.md: far below this; a larger file
#: is not hashed (it cannot be the one written) and is not copied
FILE_MAX_BYTES = 16 << 20


#: a turn id that says only where the turn is (LoCoMo's dia_id), shown to the agent as it is
PLACE_ID = re.compile(r"^D\d+:\d+$")


def shown_id(session: Session, position: int, dia_id: str) -> str:
    """The id the agent sees for the turn at 1-based `position` of `session`."""
    return dia_id if PLACE_ID.match(dia_id) else f"D{session.index}:{position}"


def shown_ids(conversation: ConversationView) -> dict[str, str]:
    """{id the agent sees: the turn's own id} for every turn of the conversation."""
    return {shown_id(s, n, t.dia_id): t.dia_id for s in conversation.sessions for n, t in enumerate(s.turns, 1)}


def session_relpath(session: Session) -> str:
    return f"sessions/session_{session.index}.md"


def render_session(session: Session, conversation: ConversationView) -> str:
    lines = [
        f"# Session {session.index}",
        "",
        f"Date: {session.date_time}",
        f"Speakers: {conversation.speaker_a}, {conversation.speaker_b}",
        "",
    ]
    lines += [f"[{shown_id(session, n, turn.dia_id)}] {turn.render()}" for n, turn in enumerate(session.turns, 1)]
    return "\n".join(lines) + "\n"


def render_index(conversation: ConversationView, *, sessions: bool, notes: bool) -> str:
    lines = [
        f"# Conversation between {conversation.speaker_a} and {conversation.speaker_b}",
        "",
    ]
    if sessions:
        lines += [
            f"{len(conversation.sessions)} sessions, one file each under sessions/. A session file starts with its date;",
            "then each line is one turn: `[DIA_ID] SPEAKER: TEXT`, with `[image: CAPTION]` when a photo was shared.",
            "",
        ]
        lines += [f"- {session_relpath(s)}: {s.date_time} ({len(s.turns)} turns)" for s in conversation.sessions]
        lines.append("")
    if notes:
        lines += [f"Notes about the conversation: {NOTES}", ""]
    return "\n".join(lines)


def write_workspace(folder: Path, conversation: ConversationView, *, sessions: bool, notes: str | None) -> dict[str, str]:
    """Create the new folder `folder`; return {relpath: text} of what was written (notes excluded).
    An earlier folder of that name is the caller's to remove first (`_safe_fs.remove_tree`)."""
    folder.mkdir(parents=True)
    files = {"INDEX.md": render_index(conversation, sessions=sessions, notes=notes is not None)}
    if sessions:
        for session in conversation.sessions:
            files[session_relpath(session)] = render_session(session, conversation)
    for relpath, text in files.items():
        write_file(folder, relpath, text.encode("utf-8"))
    if notes is not None:
        write_notes(folder, notes)
    return files


@dataclass(frozen=True)
class NotesRead:
    """memory/notes.md as the harness took it, and why it took less than the file (findings)."""

    text: str
    findings: list[str] = field(default_factory=list)


def read_notes(folder: Path) -> NotesRead:
    """The agent's notes: "" when there are none, or when memory/notes.md (or memory/) is a
    link, a FIFO, a device or a file hard-linked from outside; cut at NOTES_MAX_BYTES."""
    try:
        got = read_regular(folder, NOTES, max_bytes=NOTES_MAX_BYTES)
    except Refused as e:
        return NotesRead("", [f"{e}; not read: the notes are taken as empty"])
    if got is None:
        return NotesRead("")
    data, size = got
    # an incremental decoder drops a character cut in half at the bound instead of mangling it
    text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data, final=size <= NOTES_MAX_BYTES)
    if size <= NOTES_MAX_BYTES:
        return NotesRead(text)
    return NotesRead(text, [f"{NOTES}: {size} bytes; only the first {NOTES_MAX_BYTES} were kept as the notes"])


def write_notes(folder: Path, text: str) -> None:
    write_file(folder, NOTES, text.encode("utf-8"))


def copy_workspace(source: Path, target: Path) -> list[str]:
    """Copy a workspace template into the new folder `target`: folders and regular files only;
    the findings name whatever was left out (a template the agent never touched has none)."""
    return copy_tree(source, target, max_bytes=FILE_MAX_BYTES)


def expected_layout(files: dict[str, str], *, notes: bool) -> dict[str, str]:
    """{relpath: kind} of what the harness wrote: each file, its folders, memory/notes.md."""
    paths = [*files, *([NOTES] if notes else [])]
    out = {}
    for rel in paths:
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            out["/".join(parts[:depth])] = "folder"
    out.update({rel: "file" for rel in paths})
    return out


def audit(folder: Path, files: dict[str, str], *, notes: bool) -> list[str]:
    """What the agent left in its workspace that the harness will not follow: a file or folder
    of the harness's changed to another type, a link or special file it made, a file
    hard-linked from outside. One line per name, the name shown safely (`show`)."""
    expected = expected_layout(files, notes=notes)
    entries = walk(folder)
    inside = links_inside(entries)
    findings = []
    for rel, entry in entries.items():
        want = expected.get(rel)
        if want is not None and entry.kind != want:
            findings.append(f"{show(rel)}: the harness made a {want} here, the agent left a {entry.describe()}")
        elif want is None and entry.kind not in ("file", "folder"):
            findings.append(f"{show(rel)}: the agent made a {entry.describe()}")
        if outside_link(entry, inside):
            findings.append(
                f"{show(rel)}: a hard link to a file outside the workspace ({entry.nlink} names, {inside[entry.key]} inside)"
            )
    return findings


def fingerprint(folder: Path, *, skip: str = MEMORY) -> dict[str, str]:
    """sha256 of every regular file outside `skip` (to find what an agent changed); a link, a
    special file, a file hard-linked from outside or an oversized one gets its kind instead."""
    entries = walk(folder)
    inside = links_inside(entries)
    out = {}
    for rel, entry in entries.items():
        if rel == skip or rel.startswith(skip + "/") or entry.kind == "folder":
            continue
        out[rel] = _digest(folder, rel, entry, entries, inside)
    return out


def _digest(folder: Path, rel: str, entry: Entry, entries: dict[str, Entry], inside: Counter[tuple[int, int]]) -> str:
    if entry.kind != "file":
        return entry.kind
    if outside_link(entry, inside):
        return "hard link from outside"
    if entry.size > FILE_MAX_BYTES:
        return f"{entry.size} bytes"
    try:
        got = read_regular(folder, rel, max_bytes=FILE_MAX_BYTES, entries=entries)
    except Refused:
        return "refused"
    return sha256_bytes(got[0]) if got is not None else "missing"


def restore(folder: Path, files: dict[str, str]) -> list[str]:
    """Put `files` back as written, keep memory/ (the agent's) as plain folders and regular
    files, and remove everything else; return what changed, names shown safely (`show`)."""
    entries = walk(folder)
    inside = links_inside(entries)
    expected = {rel: sha256_text(text) for rel, text in files.items()}
    folders = {rel for rel, kind in expected_layout(files, notes=True).items() if kind == "folder"}
    changed: list[str] = []
    removed: list[str] = []
    for rel, entry in entries.items():  # parents before children
        if any(rel.startswith(r + "/") for r in removed):
            continue
        if rel == MEMORY or rel.startswith(MEMORY + "/"):
            # the agent's notes stay, but only as folders and regular files of its own
            keep = entry.kind == "folder" or (entry.kind == "file" and rel != MEMORY and not outside_link(entry, inside))
        elif rel in expected:
            keep = _digest(folder, rel, entry, entries, inside) == expected[rel]
        else:
            keep = rel in folders and entry.kind == "folder"
        if not keep:
            remove(folder, rel)
            removed.append(rel)
            changed.append(rel)
    for rel in sorted(folders):
        make_dir(folder, rel)
    for rel, text in files.items():
        if rel not in entries or rel in changed:
            write_file(folder, rel, text.encode("utf-8"))
            changed.append(rel)
    return sorted({show(rel) for rel in changed})
