"""A memory's prefill paid once across processes: the first question of a rerun (a resume,
a second seed, the judge on the same memory) restores the memory's KV state from disk.

    python bench/prefill_restore.py                               # session_summaries, model auto
    python bench/prefill_restore.py --memory full_context --model gemma3-270m

Renders the first LoCoMo conversation's memory as bench/local_prefix_reuse.py does, then
starts the embedded server three times on one fresh prefill folder and asks the first
question each time: cold (no state: evaluated and kept), restored (a new process), and
restored again; then a second question in the last process (in-memory reuse from the
restored state). The cold first question is the yardstick (issue 45): prints each
first-question time, the ratio restored / cold (target: at most 0.1x), whether the answers are identical, the state file's size, and writes
``bench/results/prefill_restore.json``. A benchmark, not a test: it never fails on time.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import openai

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from _common import machine  # noqa: E402
from local_prefix_reuse import MEMORIES, SYSTEM, ask, locomo_path, user_message  # noqa: E402

from memorybench.llm.local import LocalServer, choose_local_model, count_tokens  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--memory", choices=sorted(MEMORIES), default="session_summaries")
    p.add_argument("--model", default="auto")
    p.add_argument("--conversation", type=int, default=0)
    p.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "prefill_restore.json")
    args = p.parse_args()

    sample = json.loads(locomo_path().read_text("utf-8"))[args.conversation]
    template = (REPO / "prompts" / "readers" / "qa_v1.txt").read_text("utf-8")
    memory = MEMORIES[args.memory](sample)
    questions = [q["question"] for q in sample["qa"][:2]]
    users = [user_message(template, memory, q) for q in questions]
    spec, n_ctx, reason = choose_local_model(SYSTEM + "\n\n" + max(users, key=len), args.model)
    print(f"{args.memory}: {count_tokens(memory, spec)} {spec.name} tokens; {reason}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="prefill-restore-") as tmp:
        store = Path(tmp) / "prefill"
        for run in ("cold", "restored", "restored again"):
            with LocalServer(spec, n_ctx, prefill_dir=store) as server:
                client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=3600)
                latency, answer, usage = ask(client, server.model_id, users[0])
                row = {
                    "run": run,
                    "server_start_s": round(server.startup_s or 0.0, 2),
                    "first_question_s": round(latency, 3),
                    "answer": answer,
                    "prompt_tokens": usage.prompt_tokens if usage else None,
                    "restored_tokens": (usage.model_extra or {}).get("restored_tokens") if usage else None,
                }
                if run == "restored again":
                    latency2, answer2, _ = ask(client, server.model_id, users[1])
                    row["second_question_s"] = round(latency2, 3)
                rows.append(row)
            print(
                f"  {run:15s} first question {row['first_question_s']:7.2f}s  restored {row['restored_tokens']} "
                f"of {row['prompt_tokens']} tokens  -> {answer!r}"
            )
        state_bytes = sum(f.stat().st_size for f in store.glob("*.kv"))
    cold, restored = rows[0]["first_question_s"], rows[1]["first_question_s"]
    ratio = restored / cold if cold else None
    identical = len({r["answer"] for r in rows}) == 1
    print(
        f"cold {cold:.2f}s, restored {restored:.2f}s: {ratio:.3f}x of cold (target <= 0.1x); "
        f"answers identical: {identical}; state on disk {state_bytes / 2**20:.1f} MiB; "
        f"second question after a restore {rows[2].get('second_question_s')}s"
    )
    out = {
        "schema": "bench.prefill_restore.v1",
        "sample_id": sample["sample_id"],
        "memory": args.memory,
        "model": spec.name,
        "n_ctx": n_ctx,
        "memory_tokens": count_tokens(memory, spec),
        "machine": machine(),
        "cold_first_question_s": cold,
        "restored_first_question_s": restored,
        "ratio_restored_to_cold": round(ratio, 4) if ratio else None,
        "answers_identical": identical,
        "state_mib": round(state_bytes / 2**20, 1),
        "runs": rows,
        "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
