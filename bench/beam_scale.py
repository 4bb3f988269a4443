"""BEAM at scale: raw_chunks and rag built over one conversation of 1M, 3M and 10M tokens.

BEAM's 1M and 10M tiers are conversations of a million and ten million tokens; our machines
cannot fetch them, so this writes one conversation in BEAM's format (chat.json: a list of
batches, each of chats of user/assistant turns with their ids and a time anchor; a
probing_questions.json beside it), made here and the same on every run (a seeded generator,
its text counted in cl100k_base tokens as it is written). Each (size, method) runs in a
process of its own, which reads the folder with memorybench's BEAM loader and builds the
memory with the real builders (`memorybench/memory/raw_chunks.py`, `rag.py`, their config
options as conf/memory/*.yaml sets them), then asks questions, and reports:

- CPU seconds (every thread's) and wall seconds of the load, of the build and, for raw_chunks,
  of its BM25 index (built at the first question), and of one warm query (the median of 5);
- peak resident memory (VmHWM, the process's own) after the load and at the end;
- yardsticks measured in the same process, the ratios quoted over them: the build over a
  plain tiktoken pass over the same turn lines (the least any token-sized chunking must do);
  the query over a plain scan of every chunk's text for the question's words (the least any
  search over the same chunks must do); the peak memory over the chat.json's bytes.

rag embeds with the default local embedder (embedder=minilm: all-MiniLM-L6-v2 on the CPU)
at the sizes named by --embed (default 1M: on 2 shared CPU cores it embeds a few chunks a
second, and 10M tokens are some 22,000 chunks); at every size it is also built with
embedder=hashing (no model: the builder's own time and memory, the embedding left out),
labelled so. Linearity: each build's seconds per million tokens, and its ratio to the
smallest size's.

Run: .venv/bin/python bench/beam_scale.py [--sizes 1M,3M,10M] [--embed 1M]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, report

#: the turns' vocabulary: a project's words, so BM25 and the embedder see text with topics
TOPICS = (
    "budget tracker flask login expense sprint deployment database schema migration dashboard api cache "
    "latency token session bug fix release review commit branch test coverage docker container server "
    "invoice report chart category account password security audit backup schedule deadline meeting "
    "garden tomato seed soil water compost trip flight hotel museum ticket passport recipe dinner bread "
    "cheese apple market training run marathon knee stretch coach novel chapter editor draft agent "
    "contract lawyer will guardian patent invention prototype investor pitch resume interview salary"
).split()
FILLER = "the a to of and in that with for on my your it is was we can this as at by from".split()
QUESTIONS = (
    "When did I plan the deployment of the budget tracker dashboard?",
    "What did the coach say about my knee before the marathon?",
    "Which hotel did I book for the museum trip?",
    "How did I fix the cache latency bug in the api?",
    "What did the lawyer suggest about the guardian in my will?",
)

CHILD = r"""
import json, statistics, sys, time
from pathlib import Path

def peak():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))

def timed(fn):
    # (result, wall seconds, CPU seconds of the process: every thread, torch's too)
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c

folder, method, embedder_name, cache = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
questions = json.loads(sys.argv[5])
import yaml
from omegaconf import OmegaConf
from memorybench.benchmarks.beam.data import _conversation
from memorybench.data.records import AskedQuestion
from memorybench.embed import make_embedder
from memorybench.memory._chunks import turn_lines
from memorybench.memory._tokens import count_tokens, encoding
from memorybench.memory.base import BuildContext
from memorybench.registry import MEMORY
encoding()  # loaded before any clock, with BM25's libraries (imported at raw_chunks' first question)
from memorybench.memory.raw_chunks import Bm25Index
Bm25Index(["warm the libraries up"]).ranked("libraries", 1)
option = yaml.safe_load(Path(sys.argv[6], f"{method}.yaml").read_text("utf-8"))
cfg = OmegaConf.create({"memory": {k: v for k, v in option.items() if k != "defaults"}, "dataset": {"name": "beam_1m"}})
embedder = None
if method == "rag":
    node = yaml.safe_load(Path(sys.argv[7], f"{embedder_name}.yaml").read_text("utf-8"))
    embedder = make_embedder(OmegaConf.create({k: v for k, v in node.items() if k != "defaults"}), cache_dir=None, prices={})
    embedder.embed(["warm the model up"])  # the model's load is no part of the build
base = peak()

(conversation, _), load_s, load_cpu = timed(lambda: _conversation(Path(folder), "beam-scale-1"))
load_rss = peak()
# the build's yardstick: one plain tiktoken pass over the same turn lines
tokens, tik_s, tik_cpu = timed(lambda: sum(count_tokens(line + "\n") for _, line in turn_lines(conversation)))

memory = MEMORY.get(method)(cfg)
ctx = BuildContext(cfg=cfg, pack=None, cache_dir=cache, embedder=embedder)
built, build_s, build_cpu = timed(lambda: memory.build(conversation, ctx))
asked = [AskedQuestion(f"q{n}", conversation.sample_id, 4, q) for n, q in enumerate(questions)]
_, first_s, first_cpu = timed(lambda: memory.for_question(built, asked[0], ctx))  # raw_chunks builds its BM25 index here
warm = [timed(lambda a=a: memory.for_question(built, a, ctx)) for a in asked]

# the query's yardstick: a plain scan of every chunk for the question's words
texts = [item.text.lower() for item in built.items]
def scan(a):
    words = [w for w in a.question.lower().rstrip("?").split() if len(w) > 3]
    return sum(1 for x in texts if any(w in x for w in words))
scans = [timed(lambda a=a: scan(a)) for a in asked]
print(json.dumps({
    "tokens": tokens, "turns": sum(len(s.turns) for s in conversation.sessions), "chunks": len(built.items),
    "load_s": load_s, "load_cpu": load_cpu, "tiktoken_s": tik_s, "tiktoken_cpu": tik_cpu,
    "build_s": build_s, "build_cpu": build_cpu, "first_query_s": first_s, "first_query_cpu": first_cpu,
    "query_s": statistics.median(w[1] for w in warm), "query_cpu": statistics.median(w[2] for w in warm),
    "scan_s": statistics.median(x[1] for x in scans), "scan_cpu": statistics.median(x[2] for x in scans),
    "answer_chars": len(warm[-1][0]), "rss_base": base, "rss_after_load": load_rss, "peak_rss": peak(),
}))
"""


def _words(rng: random.Random, count: int) -> str:
    out = []
    for n in range(count):
        out.append(rng.choice(TOPICS) if n % 3 else rng.choice(FILLER))
    return " ".join(out)


def make_conversation(folder: Path, target_tokens: int, seed: int = 0) -> dict[str, int]:
    """`folder/chat.json` and `folder/probing_questions/probing_questions.json` of about
    `target_tokens` cl100k_base tokens (counted as the turns are made), deterministic."""
    from memorybench.memory._tokens import count_tokens

    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "probing_questions").mkdir(exist_ok=True)
    batches, tokens, turn_id, day = [], 0, 0, 0
    while tokens < target_tokens:
        chats = []
        for _ in range(26):  # the 128K tier's batches hold 26 chats
            day += 1
            anchor = f"{('January', 'March', 'May', 'July')[day % 4]}-{1 + day % 28:02d}-{2024 + day // 365}"
            user = f"{_words(rng, rng.randint(20, 60))}? ->-> {len(batches) + 1},{len(chats) + 1}"
            assistant = ". ".join(_words(rng, rng.randint(15, 40)) for _ in range(rng.randint(8, 20))) + "."
            chat = [
                {
                    "role": "user",
                    "id": turn_id,
                    "content": user,
                    "index": f"{len(batches) + 1},{len(chats) + 1}",
                    "time_anchor": anchor,
                },
                {"role": "assistant", "id": turn_id + 1, "content": assistant},
            ]
            turn_id += 2
            chats.append(chat)
            tokens += sum(count_tokens(f"{anchor} | {t['role']}: {t['content']}\n") for t in chat)
            if tokens >= target_tokens:
                break
        # one anchor per batch, as in the 128K tier: its first turn carries it
        anchor = chats[0][0]["time_anchor"]
        for chat in chats:
            chat[0]["time_anchor"] = anchor
        batches.append({"batch_number": len(batches) + 1, "time_anchor": None, "turns": chats})
    (folder / "chat.json").write_text(json.dumps(batches), "utf-8")
    question = {
        "question": QUESTIONS[0],
        "answer": "In March.",
        "difficulty": "easy",
        "question_type": "context_date/time",
        "rubric": ["LLM response should state: March"],
    }
    (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps({"information_extraction": [question]}))
    return {"tokens": tokens, "turns": turn_id, "file_bytes": (folder / "chat.json").stat().st_size}


def run_child(folder: Path, method: str, embedder: str, cache: Path) -> dict:
    conf = REPO / "conf"
    args = [str(folder), method, embedder, str(cache), json.dumps(QUESTIONS), str(conf / "memory"), str(conf / "embedder")]
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{method}/{embedder} at {folder}: {out.stderr[-3000:]}")
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "process_s": round(time.perf_counter() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1M,3M,10M", help="conversation sizes in millions of tokens (0.1M for a smoke run)")
    parser.add_argument("--embed", default="1M", help="sizes at which rag embeds with embedder=minilm ('' for none)")
    ns = parser.parse_args()
    sizes = [s for s in ns.sizes.split(",") if s]
    embed = {s for s in ns.embed.split(",") if s}
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            folder = Path(tmp) / size / "1"
            t = time.perf_counter()
            made = make_conversation(folder, int(float(size.rstrip("M")) * 1_000_000))
            print(
                f"{size}: wrote {made['tokens']:,} tokens, {made['turns']:,} turns in {time.perf_counter() - t:.0f} s", flush=True
            )
            runs = [("raw_chunks", "-"), ("rag", "hashing"), *([("rag", "minilm")] if size in embed else [])]
            for method, embedder in runs:
                got = run_child(folder, method, embedder, Path(tmp) / "cache")
                key = f"{size} {method}" + (f" ({embedder})" if method == "rag" else "")
                mtok = got["tokens"] / 1e6
                index = method == "raw_chunks"  # its BM25 index is built at the first question
                build = got["build_s"] + (got["first_query_s"] if index else 0.0)
                build_cpu = got["build_cpu"] + (got["first_query_cpu"] if index else 0.0)
                rows[key] = {
                    "tokens": got["tokens"],
                    "turns": got["turns"],
                    "file_bytes": made["file_bytes"],
                    "chunks": got["chunks"],
                    "build_cpu_s": round(build_cpu, 2),
                    "build_wall_s": round(build, 2),
                    "build_cpu_s_per_mtok": round(build_cpu / mtok, 2),
                    "build_over_tiktoken_pass_cpu": round(build_cpu / got["tiktoken_cpu"], 2),
                    "tiktoken_pass_cpu_s": round(got["tiktoken_cpu"], 2),
                    "load_cpu_s": round(got["load_cpu"], 2),
                    "query_ms_cpu": round(1000 * got["query_cpu"], 2),
                    "query_ms_wall": round(1000 * got["query_s"], 2),
                    "query_over_scan_cpu": round(got["query_cpu"] / got["scan_cpu"], 3) if got["scan_cpu"] else None,
                    "scan_ms_cpu": round(1000 * got["scan_cpu"], 2),
                    "peak_rss_mb": round(got["peak_rss"] / 1e6, 1),
                    "rss_after_load_mb": round(got["rss_after_load"] / 1e6, 1),
                    "rss_base_mb": round(got["rss_base"] / 1e6, 1),
                    "rss_growth_over_file": round((got["peak_rss"] - got["rss_base"]) / made["file_bytes"], 2),
                    "process_s": got["process_s"],
                }
                print(f"  {key}: {rows[key]}", flush=True)
    linear = {}
    for label in ("raw_chunks", "rag (hashing)", "rag (minilm)"):
        per = [(s, rows[f"{s} {label}"]["build_cpu_s_per_mtok"]) for s in sizes if f"{s} {label}" in rows]
        if len(per) > 1:
            linear[label] = {s: round(v / per[0][1], 2) for s, v in per}
    report(
        "beam_scale",
        {
            "runs": rows,
            "build_per_mtok_over_smallest": linear,
            "peak_rss_mb_max": max(r["peak_rss_mb"] for r in rows.values()),
            "note": (
                "build: raw_chunks' chunking plus its BM25 index (built at the first question); rag's chunking "
                "plus the embedding of every chunk. rag (hashing) is the builder without a model. Ratios, of CPU "
                "seconds (the machine is shared): build over a plain tiktoken pass over the same lines; query "
                "(median of 5) over a plain scan of "
                "every chunk for the question's words; the peak RSS's growth over the process's base (libraries loaded) over chat.json's bytes"
            ),
        },
    )


if __name__ == "__main__":
    main()
