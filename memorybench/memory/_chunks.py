"""Chunks of the full-context lines, shared by raw_chunks and rag.

The lines are `full_context`'s (`DATE | SPEAKER: TEXT [image: CAPTION]`, one per turn).
A chunk is a run of whole consecutive lines holding at most `chunk_tokens` cl100k_base
tokens; the next chunk starts with the previous one's last lines that hold at most
`chunk_overlap` tokens (it always moves forward by at least one line). A single line
longer than a chunk is cut into `chunk_tokens`-token pieces. A chunk's sources are its
turns' dia_ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from memorybench.config import MemoryConfig
from memorybench.data.records import Conversation
from memorybench.errors import UserError
from memorybench.memory.base import MemoryItem

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig


@dataclass
class ChunksConfig(MemoryConfig):
    """`memory=raw_chunks` and `memory=rag`."""

    #: chunk size in cl100k_base tokens (whole turn lines per chunk)
    chunk_tokens: Optional[int] = None
    #: tokens of trailing lines repeated at the start of the next chunk
    chunk_overlap: Optional[int] = None
    #: chunks per question
    top_k: Optional[int] = None


def chunk_settings(cfg: DictConfig) -> tuple[int, int, int]:
    """(chunk_tokens, chunk_overlap, top_k) from `memory`, checked."""
    node = cfg.memory
    name = node.name
    size, overlap, k = node.get("chunk_tokens"), node.get("chunk_overlap"), node.get("top_k")
    if not size or int(size) < 8:
        raise UserError(f"memory.chunk_tokens={size} must be at least 8 for memory={name}")
    overlap = int(overlap or 0)
    if overlap < 0 or overlap >= int(size):
        raise UserError(f"memory.chunk_overlap={overlap} must be >= 0 and below memory.chunk_tokens={size}")
    if not k or int(k) < 1:
        raise UserError(f"memory.top_k={k} must be at least 1 for memory={name}")
    return int(size), overlap, int(k)


def turn_lines(conversation: Conversation) -> list[tuple[str, str]]:
    """(dia_id, full_context line) for every turn, in order."""
    return [
        (turn.dia_id, f"{session.date_time} | {turn.render()}") for session in conversation.sessions for turn in session.turns
    ]


def make_chunks(conversation: Conversation, chunk_tokens: int, overlap: int) -> list[MemoryItem]:
    from memorybench.memory._tokens import count_tokens, decode, encode

    lines = [(dia, line, count_tokens(line + "\n")) for dia, line in turn_lines(conversation)]
    pieces: list[tuple[list[str], list[str]]] = []  # (dia_ids, lines)
    i = 0
    while i < len(lines):
        if lines[i][2] > chunk_tokens:  # one overlong line: its own token pieces
            tokens = encode(lines[i][1])
            for start in range(0, len(tokens), chunk_tokens):
                pieces.append(([lines[i][0]], [decode(tokens[start : start + chunk_tokens])]))
            i += 1
            continue
        j, used = i, 0
        while j < len(lines) and lines[j][2] <= chunk_tokens and used + lines[j][2] <= chunk_tokens:
            used += lines[j][2]
            j += 1
        pieces.append(([d for d, _, _ in lines[i:j]], [text for _, text, _ in lines[i:j]]))
        if j >= len(lines):
            break
        k, back = j, 0
        while k - 1 > i and back + lines[k - 1][2] <= overlap:
            k -= 1
            back += lines[k][2]
        i = k
    return [
        MemoryItem(item_id=f"chunk_{n}", text="\n".join(texts), sources=tuple(dict.fromkeys(dias)))
        for n, (dias, texts) in enumerate(pieces)
    ]
