"""The memory it takes to read a LongMemEval file, as a multiple of the file's size.

longmemeval_m_cleaned.json is 2.7 GB and is read whole (json.loads, then one `Conversation`
per question). This makes a file in its format (500 questions, haystacks of sessions of
long turns, as the released files hold), reads it with memorybench's loader in a process of
its own, and reports the peak resident memory over the file's size: the ratio that
`plan dataset=longmemeval_m` multiplies the pinned size by to say what it needs
(`memorybench.benchmarks.memory_need`). A figure that cannot be a time: it is a ratio.

Run: .venv/bin/python bench/longmemeval_memory.py [MB]   (default 120)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import report

# VmHWM, the process's own peak (ru_maxrss is inherited across fork and exec on Linux: the parent
# that wrote the file would show through)
CHILD = """
import sys
from memorybench.benchmarks.longmemeval.data import load_longmemeval

def peak():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))

before = peak()
samples = load_longmemeval(sys.argv[1])
print(before, peak(), len(samples))
"""


def make(path: Path, megabytes: int) -> int:
    """A LongMemEval-format file of about `megabytes`: 500 questions, each a haystack."""
    # a user's short turn and an assistant's long one, as the released haystacks alternate them
    short = "Can you suggest a recipe for dinner tonight with what I bought at the market?"
    long = "Sure! Here are a few ideas based on apples, bread and cheese: a warm apple and brie toast, " * 8
    sessions_per_question = max(1, megabytes * 1_000_000 // 500 // ((len(short) + len(long)) * 6 + 300))
    items = []
    for n in range(500):
        ids = [f"s{n}_{k}" for k in range(sessions_per_question)]
        items.append(
            {
                "question_id": f"q{n:03d}",
                "question_type": "multi-session",
                "question": "What did I buy?",
                "answer": "apples",
                "question_date": "2023/05/30 (Tue) 10:00",
                "haystack_session_ids": ids,
                "haystack_dates": ["2023/05/11 (Thu) 17:50"] * len(ids),
                "haystack_sessions": [
                    [
                        {"role": "user", "content": f"{short} ({k}.{t})"}
                        if t % 2 == 0
                        else {"role": "assistant", "content": f"{long} ({k}.{t})"}
                        for t in range(12)
                    ]
                    for k in range(len(ids))
                ],
                "answer_session_ids": ids[:1],
            }
        )
    path.write_text(json.dumps(items), "utf-8")
    return path.stat().st_size


def main() -> None:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "longmemeval_made.json"
        size = make(path, megabytes)
        out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True)
    before, after, samples = (int(x) for x in out.stdout.split())
    report(
        "longmemeval_memory",
        {
            "file_bytes": size,
            "samples": samples,
            "peak_rss_bytes": after,
            "rss_before_bytes": before,
            "peak_over_file": round((after - before) / size, 2),
            "longmemeval_m_need_gb_at_this_ratio": round(2_737_100_077 * (after - before) / size / 1e9, 1),
        },
    )


if __name__ == "__main__":
    main()
