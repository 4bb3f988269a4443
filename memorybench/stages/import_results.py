"""The `import` stage: another project's released per-question results -> a pack, and its reproduction table.

    memorybench import FILE [FILE...] --format F [--model KEY] [--name NAME] [--allow-partial]
                       [--dataset NAME] [--dataset-path DATA] [--source REPOSITORY@COMMIT:PATH]
                       [--packs DIR] [--pins DIR] [--json]

No model call. A released format belongs to the benchmark whose questions it answers: its record
lists the format (`released_formats`) and names the module that imports it (`importer`), which
defines `FORMATS` (name -> shape, for `--help`), `import_released(paths, fmt, *, dataset,
dataset_path, name, source, packs, pins, allow_partial)` -> (the pack's folder, its source and
reproduction records, whether it was written now) and `format_reproduction(reproduction)`, the
table printed; an importer whose files may hold several models' answers lists those formats in
`MODEL_FORMATS` and is given `model_key` (`--model KEY`) as well. Here: the command line, the
arguments every importer shares, the dispatch by format through the record. What every importer
writes alike is `stages/importers/` (a file read bounded and never through a link, rows a pack
can hold, the pack built whole in a temp folder and renamed into place, the file's own labels as
a judge folder); each benchmark's formats, how their rows meet its questions and what the pack
holds are its own package's (docs/reproducing.md).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memorybench.answer.imported import ImportSource, Reproduction, SourceRef
from memorybench.benchmark import Benchmark, benchmark_of_format, benchmarks
from memorybench.errors import OneLineParser, UserError, did_you_mean, printable
from memorybench.names import path_component

__all__ = ["ImportResult", "import_main", "import_results", "parse_source"]

DEFAULT_PACKS = "outputs/packs"
DEFAULT_NAME = "imported"


@dataclass(frozen=True)
class ImportResult:
    pack_root: Path
    source: ImportSource
    reproduction: Reproduction
    #: false when the same files were imported before and the pack was found finished
    created: bool


def parse_source(text: str | None) -> SourceRef | None:
    """`--source REPOSITORY@COMMIT:PATH` as a record (None when not given)."""
    if text is None:
        return None
    repository, at, rest = text.partition("@")
    commit, colon, path = rest.partition(":")
    if not (at and colon and repository and commit and path):
        raise UserError(
            f"--source {text!r} must be REPOSITORY@COMMIT:PATH, e.g. "
            "memodb-io/memobase@358c16bbc6d687937d79bc2f984a11c3be8da901:docs/experiments/locomo-benchmark/fixture/memobase/x.json"
        )
    return SourceRef(repository=repository, commit=commit, path=path)


def import_results(
    files: Sequence[str | os.PathLike[str]],
    fmt: str,
    *,
    model_key: str | None = None,
    name: str = DEFAULT_NAME,
    source: SourceRef | str | None = None,
    packs: str | os.PathLike[str] = DEFAULT_PACKS,
    pins: str | os.PathLike[str] | None = None,
    allow_partial: bool = False,
    dataset: str | None = None,
    dataset_path: str | os.PathLike[str] | None = None,
) -> ImportResult:
    """Import released files of format `fmt` into a pack; return it and its reproduction table.

    The benchmark whose record lists `fmt` imports them (its `importer`). A file without a row
    for some questions its format holds is refused unless `allow_partial`: then the pack holds
    the questions it answers, labelled partial. `dataset` (and `dataset_path` for a local copy)
    name the dataset the answers were made over, for the formats whose importer asks it;
    `model_key` names one model of a file that holds several (`MODEL_FORMATS`)."""
    owner = benchmark_of_format(fmt)
    if owner is None:
        raise UserError(f"unknown --format {fmt!r}. {did_you_mean(fmt, _formats())}")
    name = path_component(name, "experiment name", "pass --name NAME")
    ref = parse_source(source) if isinstance(source, str) or source is None else source
    paths = [Path(f).expanduser().absolute() for f in files]  # not resolved: a link given as FILE is refused, not followed
    if not paths:
        raise UserError("memorybench import needs the released file(s) to import")
    options: dict[str, Any] = {}
    if _importer_has(owner, "MODEL_FORMATS"):
        options["model_key"] = model_key  # its readers answer a --model their format does not take
    elif model_key is not None:
        raise UserError(
            f"--model {model_key} is for {', '.join(_model_formats())} files, which hold several models; a {fmt} file holds one"
        )
    root, record, rep, created = owner.own("importer", "import_released")(
        paths,
        fmt,
        dataset=dataset,
        dataset_path=dataset_path,
        name=name,
        source=ref,
        packs=packs,
        pins=pins,
        allow_partial=allow_partial,
        **options,
    )
    return ImportResult(root, record, rep, created=created)


def _importer_has(owner: Benchmark, attribute: str) -> bool:
    """Whether the benchmark's importer module defines `attribute` (an optional part of its contract)."""
    try:
        owner.own("importer", attribute)
    except AttributeError:
        return False
    return True


def _model_formats() -> list[str]:
    """The released formats whose files hold several models (`--model KEY`), every importer's."""
    return [
        f
        for b in benchmarks().values()
        if b.importer and _importer_has(b, "MODEL_FORMATS")
        for f in b.own("importer", "MODEL_FORMATS")
    ]


# -- command line -----------------------------------------------------------------------
def _formats() -> dict[str, str]:
    """Every released format an importer reads, with its shape, benchmark by benchmark (LoCoMo first)."""
    return {name: shape for b in benchmarks().values() if b.importer for name, shape in b.own("importer", "FORMATS").items()}


def _parser() -> OneLineParser:
    shapes = _formats()
    parser = OneLineParser(
        prog="memorybench import",
        description="Import another project's released LoCoMo results, or the LongMemEval authors' hypothesis or judged file, "
        "into a pack, and print how far its table reproduces.",
        epilog="formats: " + "; ".join(f"{name}: {shape}" for name, shape in shapes.items()),
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="the released file(s): results first or in any order (stats, responses)"
    )
    parser.add_argument("--format", required=True, dest="fmt", metavar="F", help=f"one of {', '.join(shapes)}")
    parser.add_argument(
        "--dataset",
        metavar="NAME",
        help="longmemeval formats: the dataset the answers were made over "
        "(longmemeval_oracle, longmemeval_s, longmemeval_m; the pin, as dataset=NAME)",
    )
    parser.add_argument(
        "--dataset-path",
        metavar="DATA",
        help="longmemeval formats: a local copy of that dataset (recorded with its sha256, as dataset.path=FILE)",
    )
    parser.add_argument(
        "--model", dest="model_key", metavar="KEY", help="locomo_task_eval: the model whose <KEY>_prediction to import"
    )
    parser.add_argument(
        "--name", default=DEFAULT_NAME, help=f"the experiment name, the pack's folder under --packs (default {DEFAULT_NAME})"
    )
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="import a file without a row for some questions its format holds (some conversations, a run that "
        "stopped) as a pack labelled partial, over the questions it holds; refused without it",
    )
    parser.add_argument("--source", metavar="REPOSITORY@COMMIT:PATH", help="where the results file was published (recorded)")
    parser.add_argument("--packs", default=DEFAULT_PACKS, help=f"packs root (paths.packs; default {DEFAULT_PACKS})")
    parser.add_argument(
        "--pins", help="pins folder with the pinned LoCoMo and punkt_tab (default: $MEMORYBENCH_PINS, user cache)"
    )
    parser.add_argument("--json", action="store_true", help="print the reproduction record as JSON instead of the table")
    return parser


def import_main(argv: Sequence[str]) -> int:
    """`memorybench import FILE [FILE...] --format F [...]`: write the pack, print the table and where the pack is."""
    ns = _parser().parse_args(list(argv))
    if ns.pins:
        from memorybench.data.pins import nltk_data_dir
        from memorybench.score.lexical import set_nltk_data_dir

        set_nltk_data_dir(nltk_data_dir(ns.pins))
    result = import_results(
        ns.files,
        ns.fmt,
        model_key=ns.model_key,
        name=ns.name,
        source=ns.source,
        packs=ns.packs,
        pins=ns.pins,
        allow_partial=ns.allow_partial,
        dataset=ns.dataset,
        dataset_path=ns.dataset_path,
    )
    owner = benchmark_of_format(ns.fmt)
    assert owner is not None  # import_results refuses a format no benchmark reads
    table = owner.own("importer", "format_reproduction")
    # the table quotes the file's answers and notes: no control character reaches the terminal
    print(printable(result.reproduction.dump() if ns.json else table(result.reproduction)), end="" if ns.json else "\n")
    print(f"pack: {result.pack_root}", file=sys.stderr if ns.json else sys.stdout)
    return 0
