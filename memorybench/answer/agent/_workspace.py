"""Agent workspaces, written without a model from what a `ConversationView` holds.

    INDEX.md                 who talks, how many sessions, one line per session file
    sessions/session_N.md    a header with the session date, then one line per turn:
                             `[D1:3] SPEAKER: TEXT [image: CAPTION]`
    memory/notes.md          the agent's notes (notes_only, or persist on)

No question, gold answer or evidence id list exists in a ConversationView, so none can
be written here (DESIGN.md 4.1). Every turn line starts with its dia_id, so what an
agent's command printed says which turns it read.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from memorybench.hashing import sha256_bytes, sha256_text
from memorybench.answer.base import ConversationView
from memorybench.data.records import Session

NOTES = "memory/notes.md"


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
    lines += [f"[{turn.dia_id}] {turn.render()}" for turn in session.turns]
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
        lines += [
            f"- {session_relpath(s)}: {s.date_time} ({len(s.turns)} turns)" for s in conversation.sessions
        ]
        lines.append("")
    if notes:
        lines += [f"Notes about the conversation: {NOTES}", ""]
    return "\n".join(lines)


def write_workspace(folder: Path, conversation: ConversationView, *, sessions: bool, notes: str | None) -> dict[str, str]:
    """Create `folder` afresh; return {relpath: text} of what was written (notes excluded)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    files = {"INDEX.md": render_index(conversation, sessions=sessions, notes=notes is not None)}
    if sessions:
        for session in conversation.sessions:
            files[session_relpath(session)] = render_session(session, conversation)
    for relpath, text in files.items():
        target = folder / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, "utf-8")
    if notes is not None:
        write_notes(folder, notes)
    return files


def read_notes(folder: Path) -> str:
    path = folder / NOTES
    try:
        return path.read_text("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def write_notes(folder: Path, text: str) -> None:
    path = folder / NOTES
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


def copy_workspace(source: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=True)


def fingerprint(folder: Path, *, skip: str = "memory/") -> dict[str, str]:
    """sha256 of every file outside `skip` (to find what an agent changed)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if rel.startswith(skip) or rel + "/" == skip or path.is_dir():
            continue
        out[rel] = sha256_bytes(path.read_bytes()) if path.is_file() and not path.is_symlink() else "link"
    return out


def restore(folder: Path, files: dict[str, str]) -> list[str]:
    """Put `files` back as written and remove anything else outside memory/; return what changed."""
    expected = {rel: sha256_text(text) for rel, text in files.items()}
    actual = fingerprint(folder)
    changed = sorted(rel for rel in set(expected) | set(actual) if expected.get(rel) != actual.get(rel))
    for rel in changed:
        path = folder / rel
        if path.is_symlink() or path.is_file():
            path.unlink()
        if rel in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[rel], "utf-8")
    # empty folders an agent created outside memory/
    for path in sorted(folder.rglob("*"), reverse=True):
        rel = path.relative_to(folder).as_posix()
        if path.is_dir() and not path.is_symlink() and not rel.startswith("memory") and rel != "sessions" and not any(path.iterdir()):
            path.rmdir()
    return changed
