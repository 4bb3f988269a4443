"""LoCoMo-Plus's cue/trigger items stitched into LoCoMo's conversations, seeded and recorded.

The authors' `data/build_conv.py` (pinned) places each of `locomo_plus.json`'s 401 items in
a LoCoMo conversation picked by an unseeded `random.choice`, so their inputs cannot be
rebuilt. Here the pick is `random.Random(seed)`'s, drawn in file order, and everything else
follows `build_context` step by step:

- the conversation's session times (`%I:%M %p on %d %B, %Y`);
- the trigger's time is the last session's plus 7 days, the cue's that minus `time_gap`
  read by `parse_time_gap` (weeks 7 days, months 30, years 365; a gap it cannot read is 0);
- A and B of the cue and the trigger are the conversation's `speaker_a` and `speaker_b`;
- the cue is a session of its own, placed among the sessions by time (a session at the same
  time stays before it, as Python's stable sort keeps it).

The trigger is the question asked at the trigger's time: the memory holds everything before
it (the authors put it at the end of the dialogue they show the model). Each item's record
(`Stitch`: which conversation, the cue's place and times, the speaker mapping) is kept with
the sample, so `show` can say how it was built and the same seed gives the same bytes.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

__all__ = ["LOCOMO_TIME", "Stitch", "cue_evidence", "locomo_time", "parse_ab_dialogue", "parse_time_gap", "stitch"]

#: how LoCoMo writes a session's date ("1:56 pm on 8 May, 2023")
LOCOMO_TIME = "%I:%M %p on %d %B, %Y"
_NUM_WORD = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_GAP = re.compile(
    r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a|an)\b\s*(week|weeks|month|months|year|years)\b"
)


def parse_time_gap(time_gap: str) -> int:
    """Days back from the trigger to the cue, as build_conv.py's `parse_time_gap` reads them."""
    found = _GAP.search(time_gap.lower().strip())
    if not found:
        return 0
    number, unit = found.groups()
    count = int(number) if number.isdigit() else 1 if number in ("a", "an") else _NUM_WORD.get(number, 0)
    return count * (7 if unit.startswith("week") else 30 if unit.startswith("month") else 365)


def parse_ab_dialogue(text: str) -> list[tuple[str, str]]:
    """(A or B, text) of each line that starts with `A:` or `B:` (build_conv.py's rule)."""
    turns = []
    for line in text.split("\n"):
        line = line.strip()
        if line.startswith("A:") or line.startswith("B:"):
            turns.append((line[0], line[2:].strip()))
    return turns


def locomo_time(when: datetime) -> str:
    """A time as LoCoMo writes a session's date: `1:56 pm on 8 May, 2023`."""
    hour = when.hour % 12 or 12
    return f"{hour}:{when.minute:02d} {'am' if when.hour < 12 else 'pm'} on {when.day} {when.strftime('%B')}, {when.year}"


@dataclass(frozen=True)
class Stitch:
    """How one item was stitched: what `show` prints and the sample records."""

    item: int
    conversation: str
    #: the 0-based position of the cue session among the stitched sessions
    cue_position: int
    #: the LoCoMo session the cue follows (1-based index; 0: before the first)
    after_session: int
    cue_time: str
    query_time: str
    time_gap: str
    gap_days: int
    speakers: dict[str, str]
    relation_type: str

    def describe(self) -> str:
        return (
            f"LoCoMo-Plus item {self.item} stitched into {self.conversation}: the cue ({self.time_gap}, "
            f"{self.gap_days} days before the trigger) as a session at {self.cue_time}, after session "
            f"{self.after_session}; the trigger asked at {self.query_time}; A = {self.speakers['A']}, "
            f"B = {self.speakers['B']}"
        )


def stitch(items: list[dict[str, Any]], conversations: list[Any], seed: int) -> list[tuple[Any, Stitch]]:
    """(base conversation, Stitch) of each item in file order: the conversation drawn by
    `random.Random(seed).choice`, the cue's place and times as build_conv.py computes them."""
    rng = random.Random(seed)
    out = []
    for index, item in enumerate(items):
        base = rng.choice(conversations)
        times = [datetime.strptime(s.date_time.strip(), LOCOMO_TIME) for s in base.sessions]
        query_time = times[-1] + timedelta(days=7)
        days = parse_time_gap(str(item["time_gap"]))
        cue_time = query_time - timedelta(days=days)
        after = sum(1 for t in times if t <= cue_time)  # stable sort: a session at the cue's time stays first
        out.append(
            (
                base,
                Stitch(
                    index,
                    base.sample_id,
                    after,
                    after,
                    locomo_time(cue_time),
                    locomo_time(query_time),
                    str(item["time_gap"]),
                    days,
                    {"A": base.speaker_a, "B": base.speaker_b},
                    str(item.get("relation_type") or ""),
                ),
            )
        )
    return out


def cue_evidence(turns: list[tuple[str, str]]) -> str:
    """The cue as the authors' judge reads it (unified_input.py `_cue_dialogue_to_evidence`):
    `SPEAKER：TEXT` lines (a full-width colon), turns without text left out."""
    return "\n".join(f"{speaker}\uff1a{text.strip()}" for speaker, text in turns if text)
