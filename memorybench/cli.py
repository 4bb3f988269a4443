"""Console entry point: thin. Parse, compose, call a stage; user errors print one line.

memorybench fetch                     download and verify the pinned files
memorybench qa [-m] [OVERRIDES...]    run QA (Hydra; -m sweeps)
memorybench plan [-m] [OVERRIDES...]  list the run specs and ids a run or sweep would make
memorybench rescore PACK              recompute predictions.csv and metrics.json
memorybench autorater PACK [--passes N] [judge=...]   Mem0's LLM judge over stored answers
memorybench judge-check [judge=...] [max_questions=N]  a judge's acceptance of known-wrong answers and of gold
memorybench compare ...               seeds: mean, sd, bootstrap CI; paired differences
memorybench verify PACK [--json]      check a pack: schemas, counts, hashes, gold, secrets
memorybench import FILE --format F    another project's released results as a pack; its table reproduced
memorybench aggregate PACKS...        collected/examples.parquet and a per-run table
memorybench collect-full PACKS...     one collected pack, repeated strings stored once
memorybench report DESIGN             tables and figures from conf/analysis/DESIGN.yaml
memorybench ls [PACKS...]             the runs: id, memory, reader, questions, F1, J, cost, status (`latest` names the newest)
memorybench show PACK QUESTION_ID     one question's walk: row, memory, prompt, calls, scores, verdicts, blame
memorybench view PACKS... [--out F]   one self-contained HTML file to browse packs question by question
memorybench board PACKS... --out DIR  a static site: one table per benchmark, intervals, judges, protocol marks
memorybench track PACKS...            log finished packs to MLflow
memorybench pull GS_URI DIR           copy a finished pack from a bucket to a local folder
memorybench task                      run one Cloud Run task (reads MEMORYBENCH_MANIFEST)
memorybench wave STAGE --root ROOT    run a later stage over every finished pack
memorybench completion bash|zsh|fish  a shell completion script: commands, config groups, options, keys
memorybench dev cloud-emulators       fake-gcs-server and the Cloud Run stand-in on 127.0.0.1; prints the env to export
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from memorybench.errors import OneLineParser, UserError, did_you_mean, report

#: `memorybench --help`: the commands, one line each (the docstring less its first line, which is for us)
USAGE = (
    "memorybench: reproducible long-term conversational memory experiments on LoCoMo\n\ncommands:\n"
    + ((__doc__ or "").split("\n", 1)[-1].strip("\n"))
    + "\n\n`memorybench COMMAND --help` explains one; `memorybench qa --help` lists the config groups and settings."
)
MULTIRUN_FLAGS = ("-m", "--multirun")
#: flags Hydra's own command line defines (anything else is refused in one line)
HYDRA_FLAGS = (
    "-m",
    "--multirun",
    "--cfg",
    "-c",
    "--info",
    "-i",
    "--resolve",
    "--package",
    "-p",
    "--help",
    "-h",
    "--hydra-help",
    "--run",
    "-r",
    "--config-path",
    "-cp",
    "--config-name",
    "-cn",
    "--config-dir",
    "-cd",
    "--shell-completion",
    "-sc",
    "--version",
    "--experimental-rerun",
)


def cmd_fetch(args: Sequence[str]) -> int:
    from memorybench.data.pins import fetch_pins, user_pins_dir

    parser = OneLineParser(prog="memorybench fetch", description="Download and verify the pinned files.")
    parser.add_argument(
        "--pins",
        help="pins folder (default: $MEMORYBENCH_PINS or the user cache dir); "
        "its verified files are also copied into the user cache dir",
    )
    parser.add_argument(
        "--peers",
        action="store_true",
        help="also the peers' released results (Memobase, Zep, Honcho; Cognee's BEAM runs) into peers/, pinned like the data",
    )
    parser.add_argument(
        "--dataset",
        action="append",
        default=[],
        metavar="NAME",
        help="also a large dataset file by its pin: longmemeval_oracle (15 MB), longmemeval_s (277 MB), "
        "longmemeval_m (2.7 GB); streamed, resumable, size and sha256 checked. A dataset fetched "
        "with the other pins (locomo10, beam_128k's folder of 40 files) is verified as a whole",
    )
    ns = parser.parse_args(args)
    from memorybench.benchmark import benchmarks, datasets

    known = datasets()
    pinned = {name: d for name, d in known.items() if d.pin is not None}
    for name in ns.dataset:
        if name not in known:
            raise UserError(f"--dataset {name!r} is not a dataset memorybench knows; choose one of {', '.join(pinned)}")
        known[name].pinned()  # a dataset without a pin: one line naming dataset.path
    # each benchmark's own pinned files and its datasets' (a folder's files, the folder verified as a
    # whole; a large file only with --dataset)
    extra = tuple(
        p
        for b in benchmarks().values()
        for p in (*(d.pinned() for d in b.datasets if d.fetched_with_pins and not d.folder), *b.own_pins())
    )
    if ns.peers:  # others' released results, each benchmark's own (LoCoMo's: Memobase, Zep, Honcho; BEAM's: Cognee's runs)
        extra += tuple(p for b in benchmarks().values() for p in b.own_peer_pins())
    folders = tuple(dict.fromkeys(d.pinned() for d in known.values() if d.fetched_with_pins and d.folder))
    root = fetch_pins(ns.pins, cache=user_pins_dir(), extra=extra, folders=folders)
    for name in ns.dataset:
        if known[name].large:
            from memorybench.data.large_pins import fetch_large

            fetch_large(known[name].pinned(), root)
    print(
        f"pins verified in {root}"
        + (f"; the peers' released results in {user_pins_dir() / 'peers'}" if ns.peers else "")
        + (f"; datasets: {', '.join(ns.dataset)}" if ns.dataset else "")
    )
    return 0


def _split_overrides(args: Sequence[str]) -> tuple[list[str], bool]:
    multirun = any(a in MULTIRUN_FLAGS for a in args)
    return [a for a in args if a not in MULTIRUN_FLAGS], multirun


def _asks_help(args: Sequence[str]) -> bool:
    return any(a in ("--help", "-h") for a in args)


def _asks_completion(args: Sequence[str]) -> bool:
    from memorybench.completion import FLAGS

    return any(a in FLAGS for a in args)


def cmd_plan(args: Sequence[str]) -> int:
    from memorybench.config import shown_override
    from memorybench.plan import plan_runs

    if _asks_completion(args):
        from memorybench.completion import shell_completion

        return shell_completion(args, COMMANDS)
    if _asks_help(args):
        from memorybench.help import qa_help

        print(qa_help("plan"))
        return 0
    from memorybench.secrets import scrub

    estimate = "--estimate" in args  # per spec: model calls, tokens and cost, before any call
    questions = "--questions" in args  # per spec: each question's kind and its haystack's size
    overrides, multirun = _split_overrides([a for a in args if a not in ("--estimate", "--questions")])
    specs = plan_runs(overrides, multirun)  # composing registers each spec's credentials
    estimates = []
    for i, spec in enumerate(specs):
        # the overrides as typed, less any credential (a key in a URL's userinfo or query)
        print(scrub(f"{i}\t{spec.name}\t{spec.run_id}\t{' '.join(shown_override(o) for o in spec.overrides)}"))
        if questions:
            from memorybench.plan_questions import question_table

            print("\n".join(scrub(line) for line in question_table(spec.cfg)))
        if estimate:
            from memorybench.estimate import estimate_run, format_estimate

            estimates.append(estimate_run(spec.cfg, spec.run_id))
            print("\n".join(scrub(line) for line in format_estimate(estimates[-1])))
    if estimate:
        from memorybench.estimate import format_total

        print(format_total(estimates))
    print(f"{len(specs)} run spec(s)", file=sys.stderr)
    return 0


def cmd_qa(args: Sequence[str]) -> int:
    from memorybench.plan import check_jobs_installed, check_launcher_installed, plan_runs

    if _asks_completion(args):  # Hydra's completion, under the `memorybench qa` prefix
        from memorybench.completion import shell_completion

        return shell_completion(args, COMMANDS)
    if _asks_help(args):
        from memorybench.help import qa_help

        print(qa_help("qa"))
        return 0

    overrides, multirun = _split_overrides(args)
    hydra_flags = [a for a in overrides if a.startswith("-")]
    for flag in hydra_flags:
        if flag.split("=", 1)[0] not in HYDRA_FLAGS:
            raise UserError(f"unknown option {flag}; flags: -m/--multirun, --cfg job|hydra|all, --info, --resolve, --help")
    check_launcher_installed(overrides)  # a launcher of the cloud extra: one line if it is not installed, before Hydra
    # compose and validate every job before any model call or launcher
    specs = [] if hydra_flags else plan_runs(overrides, multirun)
    if multirun:
        check_jobs_installed(specs, overrides)  # a single run checks its own (a finished pack needs nothing)
    from memorybench.hydra_app import qa_app

    sys.argv = ["memorybench qa", *args]
    try:
        qa_app()
    finally:
        # the driver (never a remote task) logs every finished pack of the sweep to MLflow
        if specs:
            from memorybench.tracking import log_run_specs, print_tracking

            for result in log_run_specs(specs):
                print_tracking(result)
    return 0


def cmd_rescore(args: Sequence[str]) -> int:
    from memorybench.pack.run_pack import require_pack_folder
    from memorybench.stages.rescore import format_table, rescore

    parser = OneLineParser(prog="memorybench rescore", description="Recompute scores from a pack's stored rows.")
    parser.add_argument("pack", help="a pack folder: <packs>/<name>/runs/<run_id>")
    ns = parser.parse_args(args)
    metrics = rescore(require_pack_folder(ns.pack))
    print(format_table(metrics))
    return 0


def _stage(module: str, function: str):
    """A command that hands its arguments to `<module>.<function>(argv)` (imported lazily)."""

    def command(args: Sequence[str]) -> int:
        import importlib

        return int(getattr(importlib.import_module(module), function)(list(args)) or 0)

    return command


def cmd_task(args: Sequence[str]) -> int:
    from memorybench.cloudrun.worker import task_main

    return task_main(list(args))


def cmd_wave(args: Sequence[str]) -> int:
    from memorybench.cloudrun.waves import wave_main

    return wave_main(list(args))


COMMANDS = {
    "fetch": cmd_fetch,
    "qa": cmd_qa,
    "plan": cmd_plan,
    "rescore": cmd_rescore,
    "task": cmd_task,
    "wave": cmd_wave,
    "autorater": _stage("memorybench.stages.autorater", "autorater_main"),
    "judge-check": _stage("memorybench.stages.judge_check", "judge_check_main"),
    "compare": _stage("memorybench.compare.compare_command", "compare_main"),
    "verify": _stage("memorybench.pack.verify", "verify_main"),
    "aggregate": _stage("memorybench.compare.aggregate", "aggregate_main"),
    "collect-full": _stage("memorybench.compare.collect", "collect_main"),
    "report": _stage("memorybench.compare.report", "report_main"),
    "ls": _stage("memorybench.viewers.ls", "ls_main"),
    "show": _stage("memorybench.viewers.show", "show_main"),
    "view": _stage("memorybench.viewers.view", "view_main"),
    "board": _stage("memorybench.board.board_command", "board_main"),
    "track": _stage("memorybench.tracking", "track_main"),
    "pull": _stage("memorybench.stages.pull", "pull_main"),
    "import": _stage("memorybench.stages.import_results", "import_main"),
    "completion": lambda args: _completion(args),
    "dev": _stage("memorybench.cloudrun.emulators", "dev_main"),
}


def _completion(args: Sequence[str]) -> int:
    from memorybench.completion import completion_main

    return completion_main(args, COMMANDS)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if not args or args[0] in ("-h", "--help"):  # inside the handlers: `memorybench --help | head -3`
            print(USAGE.strip())
            sys.stdout.flush()
            return 0 if args else 2
        command, rest = args[0], args[1:]
        if command not in COMMANDS:
            return report(UserError(f"unknown command {command!r}. {did_you_mean(command, COMMANDS)}"))
        code = COMMANDS[command](rest)
        sys.stdout.flush()  # a closed pipe raises here, inside the handlers, not at exit
        return code
    except UserError as e:
        return report(e)
    except BrokenPipeError:
        # the reader of our stdout left (`memorybench plan ... | head -1`): what was computed
        # is written already; end quietly, as a shell tool does, and keep Python's exit-time
        # flush from raising again into the closed pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what the shell reports for a tool its pipe stopped
    except OSError as e:
        from memorybench.pack.journal import NO_SPACE, disk_full

        if e.errno not in NO_SPACE:
            raise
        # a full disk outside the pack's own writers (a stage's own files, a cache): one line too
        return report(disk_full(e.filename, e))
    except KeyboardInterrupt:
        print("memorybench: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
