"""What a benchmark is to the rest of memorybench, and which benchmark a run or a pack is.

The core (run, pack, verify, compare, report) asks a benchmark through the `Benchmark` record
and never compares a benchmark's name. Each benchmark is a package of `memorybench/benchmarks/`
(`locomo`, `longmemeval`, `locomo_plus`, ...) whose `__init__.py` holds its `BENCHMARK`; a plugin
adds one the same way (its module names `BENCHMARKS`, a tuple of records: docs/extending.md).
The record says

- which datasets it has, each with its pinned file and how that file is checked (`Dataset`);
- how its file is read (`loader`: the file -> `Conversation` records, each a sample of memory
  with the questions asked over it);
- what its question kinds are called, and which unit intervals resample (`unit`: the
  cluster a question sits in, a row's `sample_id`);
- how its lexical scores relate to its own figure (`own_lexical_rules`, `lexical_rules`),
  which kinds its judge scores, what its judge's figure is called, whether it reports a task
  average, which judge protocols it owns;
- what it owns beside that: the reader prompts pinned for it (`reader_prompts`), how a
  memory renders its whole history (`history`), its own pins, the words a run ends with.

Hooks that need code name it as "module:function", imported on first use; the packages are
found by name through importlib, as the registry finds components (no import arrow points from
this low module up to a benchmark's code). Which benchmark a run or pack is comes from here
only: `benchmark_of_pack(meta)` for a pack (the `benchmark` its run_meta.json records, else its
dataset's), `benchmark_of(dataset)` for a dataset name, `benchmark_named(name)` for a benchmark's
own name, `benchmark_of_meta(data)` for run_meta.json's `data` (a pack imported or made before
datasets were named is LoCoMo's, the first benchmark).
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memorybench.errors import UserError

__all__ = [
    "FIRST_ANSWER_RULE",
    "PLAIN_RULE",
    "REFUSAL_RULE",
    "Benchmark",
    "Dataset",
    "Subset",
    "available_memory",
    "block_keys",
    "benchmark_named",
    "benchmark_of",
    "benchmark_of_meta",
    "benchmark_of_pack",
    "benchmark_scorers",
    "recorded",
    "benchmarks",
    "dataset_named",
    "default_dataset",
    "datasets",
    "imported",
    "judge_protocols",
    "plural_of",
]

#: LoCoMo's single-hop rule (normalised, Porter-stemmed token F1, no category rule): the
#: lexical diagnostic of a kind that has no LoCoMo rule of its own
PLAIN_RULE = 4
#: LoCoMo's adversarial rule (1 where the answer refuses, else 0): a kind it scores is one whose
#: right answer is a refusal (`Benchmark.refusal_kinds`)
REFUSAL_RULE = 5
#: LoCoMo's open-domain rule: token F1 against the gold before its first ";" (the gold it compares)
FIRST_ANSWER_RULE = 3


def imported(target: str) -> Any:
    """The object a "module:name" string names, imported now; `module:TABLE.key` is a key of
    a mapping the module holds; a bare "module" is the module."""
    module, _, path = target.partition(":")
    found: Any = importlib.import_module(module)
    for part in path.split(".") if path else ():
        found = found[part] if isinstance(found, Mapping) else getattr(found, part)
    return found


def plural_of(word: str) -> str:
    """A kind's word in the plural: "categories", "types", "abilities"."""
    return f"{word[:-1]}ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else f"{word}s"


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux's MemAvailable); None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


@dataclass(frozen=True)
class Dataset:
    """One dataset of a benchmark (conf/dataset/<name>.yaml): the file or folder a run reads."""

    name: str
    #: "module:NAME" of its pin (`memorybench.data.pins.Pin`; `large_pins.LargePin` for a file
    #: fetched on request by `memorybench fetch --dataset NAME`; `data.folders.FolderPin` for a
    #: folder of pinned files); None: no pin can be stated, and a run reads a local copy only
    #: (`dataset.path`), recorded with its sha256
    pin: str | None
    #: whether the pin is a large file (streamed, resumable, fetched on request)
    large: bool = False
    #: whether the dataset is a folder of files (`data.folders`): its pin a `FolderPin`, verified
    #: as a whole, `dataset.path` a folder, its sha256 that of the folder's `sha256sum` manifest
    folder: bool = False
    #: the largest local copy (`dataset.path`) memorybench reads (a folder: all its files together)
    max_bytes: int = 256 * 1024 * 1024
    #: what a user should point dataset.path at, in words
    expected: str = "the dataset file"
    #: "module:function" that reads its file, where not its benchmark's `loader` (a subset)
    loader: str | None = None
    #: the peak memory its loader takes, as a multiple of the file's size (a file read whole:
    #: `bench/longmemeval_memory.py` measures it); None: a file too small to matter
    read_ratio: float | None = None
    #: where its files are published, in words: what a dataset without a pin says it lacks
    source: str = ""
    #: whether each of its samples fits the largest embedded reader's context by the exact count
    #: (`llm.local.models.choose_local_model`; LoCoMo's conversations fit Gemma's 32k): `plan`
    #: skips its high estimate of every haystack (`plan_questions.check_memory_fits`)
    fits_local_reader: bool = False

    def __post_init__(self) -> None:
        if self.large and self.folder:
            raise ValueError(f"dataset {self.name!r}: a large file or a folder, not both")

    def pinned(self) -> Any:
        if self.pin is None:
            lie = f"its files lie in {self.source}, " if self.source else ""
            raise UserError(
                f"dataset={self.name} has no pin memorybench can verify ({lie}with no sha256 published that "
                f"we could check): set dataset.path to {self.expected}; the pack records its sha256"
            )
        return imported(self.pin)

    def provenance(self) -> dict[str, Any]:
        """run_meta.json's `data` fields of the pinned file or folder (beside `name` and `path`)."""
        pin = self.pinned()
        return {
            "pin": pin.relpath,
            "sha256": pin.sha256,
            "pinned": True,
            "repository": pin.repository,
            "commit": getattr(pin, "commit", None) or getattr(pin, "revision", None),
            "source_path": pin.source_path,
        }

    @property
    def fetched_with_pins(self) -> bool:
        """Whether `memorybench fetch` downloads and verifies its pin with the others (a file, or a
        folder's files): not a large file (fetched on request), not a dataset without a pin."""
        return self.pin is not None and not self.large

    def check_memory(self, path: Path) -> None:
        """One line, before any work, when reading the file at `path` takes more memory than this
        machine has available (`read_ratio` times its size; MemAvailable of /proc/meminfo)."""
        if self.read_ratio is None or not Path(path).is_file():
            return
        size = Path(path).stat().st_size
        need, available = size * self.read_ratio, available_memory()
        if available is not None and need > available:
            raise UserError(
                f"dataset={self.name}: reading its {size / 1e9:.1f} GB file whole takes about {need / 1e9:.1f} GB "
                f"of memory ({self.read_ratio:g} times its size, bench/longmemeval_memory.py); this machine has "
                f"{available / 1e9:.1f} GB available: free memory or use a larger machine (or a smaller dataset)"
            )


@dataclass(frozen=True)
class OwnTable:
    """A report table of one benchmark's own (`memorybench report`, `tables:` in a design)."""

    #: "module:function(frame, bootstrap) -> pandas.DataFrame" over the report's examples frame
    #: (`bootstrap`: the design's interval settings); an empty
    #: frame when no pack of the report is this benchmark's
    builder: str
    #: what the table holds, for the report's notes
    about: str


@dataclass(frozen=True)
class Subset:
    """A named set of question kinds reported beside the overall (LoCoMo's "1-4", Mem0's basis,
    and "1-5", LoCoMo's): the mean over the rows of its kinds."""

    kinds: tuple[int, ...]
    #: the kinds that must have questions for the figure to exist (LoCoMo's 1-5 only where
    #: category 5 was asked; else it would be the 1-4 figure under another name)
    asked: tuple[int, ...] = ()
    #: what the report calls it ("overall 1-5 (LoCoMo)"); empty: "overall <its name>"
    label: str = ""


@dataclass(frozen=True)
class Benchmark:
    name: str
    #: its datasets, in the order `plan` and the docs list them
    datasets: tuple[Dataset, ...]
    #: the unit of resampling, singular ("conversation", "question"): what a row's sample_id is
    unit: str
    #: question kind number -> name, as the benchmark's own scorer names them
    category_names: Mapping[int, str]
    #: "module:function" that reads a dataset file into Conversation records
    loader: str
    #: how it is called in a sentence ("LoCoMo", "LongMemEval")
    title: str = ""
    #: the release its package reproduces (data and scoring code: "repository@commit"), recorded
    #: with its name in every pack's run_meta.json and metrics.json
    version: str = ""
    #: named subsets of its kinds, reported per scorer beside the overall (`Subset`)
    subsets: Mapping[str, Subset] = field(default_factory=dict)
    #: what a published figure on this benchmark is scored by (for labels)
    scored_by: str = ""
    #: whether its rows' lexical scores are its published score (LoCoMo's category F1); else
    #: they are a diagnostic beside its judge's figure, never its score
    own_lexical_rules: bool = False
    #: the LoCoMo F1 rule (a LoCoMo category) each of its kinds is scored by; None: every kind
    #: by LoCoMo's single-hop rule (`score.rows.PLAIN_RULE`: normalised, stemmed token F1)
    lexical_rules: Mapping[int, int] | None = None
    #: the question kinds its judge scores (LoCoMo: Mem0's J skips category 5; None: every kind)
    judged: tuple[int, ...] | None = None
    #: what its judge's figure is called in tables
    judge_figure: str = "J"
    #: the judge option (`judge=NAME`) that gives its own figure
    judge: str = "mem0"
    #: what a question kind is called in labels ("categories 1-4", "types 1-6")
    kind_word: str = "category"
    #: its judge's figure in metric names and table columns: LoCoMo's is Mem0's J; another
    #: benchmark's figure keeps its own name, so no table or MLflow run calls it J
    figure_key: str = "j"
    #: whether it reports the mean of its per-kind figures beside the overall (LongMemEval's
    #: "task-averaged accuracy": a small kind weighs as much as a large one)
    task_averaged: bool = False
    #: question subsets reported beside the kinds, each marked in the question id: name -> the
    #: substring an id holds (LongMemEval's abstention questions: evaluate_qa.py's `'_abs' in question_id`)
    id_marks: Mapping[str, str] = field(default_factory=dict)
    #: what its own question protocol (a `reader_prompts` prompt) poses unlike an open-ended
    #: prompt, and which of its figures therefore differ: the report's note where both are compared
    protocol_note: str = ""
    #: the pinned reader prompts (`reader.prompt=NAME`) written for this benchmark alone
    #: (LongMemEval's show each question's date): another benchmark's run refuses them
    reader_prompts: tuple[str, ...] = ()
    #: "module:function(conversation, pins) -> BuiltMemory" that renders a conversation's whole
    #: history as the benchmark's authors do (`memory=full_context`); None: memorybench's lines
    history: str | None = None
    #: the line a finished qa run ends with: how to get the benchmark's own figure
    #: (`{pack}` is the pack's address)
    judge_hint: str = ""
    #: "module:NAME" of a tuple of `data.pins.Pin`: the benchmark's own pinned files beside its
    #: datasets (its judge's templates...), which `memorybench fetch` downloads and verifies
    pins: str | None = None
    #: "module:NAME" of a tuple of `data.pins.Pin`: others' released results on this benchmark
    #: that its importers read (Cognee's BEAM runs), fetched only by `memorybench fetch --peers`
    peer_pins: str | None = None
    #: "module:function(sample_id) -> str | None": how the benchmark built a sample, for `show`
    #: (LoCoMo-Plus: which conversation an item was stitched into, where, when)
    sample_note: str | None = None
    #: the judge protocols it owns (`judge.protocol=NAME` -> "module:Class"), registered with the
    #: built-in ones (`memorybench.registry.JUDGES`)
    judge_protocols: Mapping[str, str] = field(default_factory=dict)
    #: "module:NAME" of a tuple of `memorybench.score.scorers.Scorer`: the per-question scores of
    #: its own rules, registered with the built-in ones (`memorybench.registry.SCORERS`) and
    #: computed on every benchmark's rows (LoCoMo's category F1 is each one's lexical score)
    scorers: str | None = None
    #: "module:NAME" of a mapping `reader.prompt` name -> its pinned template (a
    #: `memorybench.templates.PinnedSlots` with `text(pins)`, `system(pins)`, `render(text, slots)`,
    #: `memories`, `message_role`), one for each of `reader_prompts`: the prompt taken out of the
    #: benchmark's pinned files and rendered as its authors render it (`templates.pinned_reader`)
    reader_templates: str | None = None
    #: the module of its judge's own figures (`autorater_metrics.json`): it defines `LABELS` (what
    #: each figure is), `scores(verdicts, passes, protocol, judge)` and `lines(metrics)` (printed);
    #: None: Mem0's J per kind is its figure
    judge_figures: str | None = None
    #: the tables of its own that `memorybench report` can make: table name -> `OwnTable`
    report_tables: Mapping[str, OwnTable] = field(default_factory=dict)
    #: the released formats (`memorybench import --format NAME`) its `importer` module reads
    released_formats: tuple[str, ...] = ()
    #: the module that imports its released files: it defines `FORMATS` (name -> shape),
    #: `import_released(paths, fmt, *, dataset, dataset_path, name, source, packs, pins,
    #: allow_partial)` and `format_reproduction(reproduction)`
    importer: str | None = None
    #: "module:function(path) -> {question_id: {column: text}}" over a dataset's file or folder:
    #: columns of its own that `plan --questions` lists after each question's kind (BEAM: its
    #: difficulty); None: none
    question_columns: str | None = None
    #: "module" of its known gold errors, an overlay on its pinned data (LoCoMo's: the
    #: locomo-audit errors.json): it defines `applies_to(data_sha256)`, `known_gold_errors(path=None,
    #: *, pins=None, dataset=None)`, `overlay_provenance(errors)`, `described(provenance)`,
    #: `corrected_score(prediction, error, kind)` and `NOT_APPLIED`; `compare`, `report`, `show`,
    #: `view` and blame apply it (`memorybench.compare.gold_overlay`); None: no audit
    gold_audit: str | None = None
    #: the module that builds its `memorybench judge-check` sets (answers known to be wrong, and
    #: right ones, over its pinned data): it defines `WHERE` (what check_benchmark calls the sets)
    #: and `calibration_sets(pins, max_questions, dataset) -> memorybench.stages.judge_check.CalibrationSets`;
    #: None: judge-check has no sets for it
    judge_sets: str | None = None
    #: the keys under which its `judge_figures` and `importer` modules write a block of its own into
    #: a record every benchmark shares (their `FIELD`: LongMemEval's figures in
    #: autorater_metrics.json, its reproduction in reproduction.json), named here so that reading
    #: a block imports no benchmark's code (`memorybench.pack.benchmark_block`)
    blocks: tuple[str, ...] = ()
    #: what one sample (the memory built once, its questions asked over it) is called in a
    #: sentence, singular: a LoCoMo conversation, a LongMemEval question's haystack
    sample: str = "conversation"
    notes: tuple[str, ...] = field(default=())

    @property
    def lexical_figure(self) -> str:
        """What its rows' lexical F1 (`locomo_f1`) is called in a line: its own published score
        ("LoCoMo F1"), else a diagnostic, never another benchmark's score."""
        return f"{self.title} F1" if self.own_lexical_rules else "token F1 (diagnostic)"

    @property
    def kinds_word(self) -> str:
        """`kind_word` in the plural: "categories", "types", "abilities"."""
        return plural_of(self.kind_word)

    def samples(self, count: int) -> str:
        """`10 conversation(s)`, `20 haystack(s)`: how many samples a figure covers."""
        return f"{count} {self.sample}(s)"

    def judge_values(self, judge: Any = None, *, passes: bool = False) -> dict[str, float | None]:
        """One judge's figures under this benchmark's own names (`figure_key`: the runs table's
        and MLflow's `<name>/<judge id>`), from its `autorater_metrics.json` record (None: the
        names, each null): the overall, `_sd` over the passes, `_task_avg` where it reports one,
        each id-marked subset's and each kind's (`_<kind name>`), and with `passes` each pass's
        (`_pass<n>`). Its `judge_figures` module names them where it defines `named(judge,
        benchmark, passes)` (LongMemEval's print_qa_metrics.py figures, BEAM's profiles); else
        they are the judge's mean score. None for a benchmark whose figure is Mem0's J
        (`figure_key` "j", LoCoMo's): the J columns hold it."""
        if self.figure_key == "j":
            return {}
        if self.judge_figures is not None:
            named = getattr(imported(self.judge_figures), "named", None)
            if named is not None:
                return dict(named(judge, self, passes))
        key, j = self.figure_key, judge.j if judge is not None else None
        by_kind = j.by_category if j is not None else {}
        return {
            key: j.overall if j is not None else None,
            f"{key}_sd": j.sd if j is not None else None,
            **{f"{key}_{kind}": by_kind.get(str(number)) for number, kind in self.category_names.items()},
            **({f"{key}_pass{n}": value for n, value in enumerate(j.passes, 1)} if passes and j is not None else {}),
        }

    def own(self, hook: str, name: str) -> Any:
        """`name` of the module its field `hook` names (`judge_figures`, `importer`)."""
        module = getattr(self, hook)
        if module is None:
            raise UserError(f"benchmark {self.name!r} has no {hook}; its record (memorybench/benchmarks/{self.name}) names none")
        return imported(f"{module}:{name}")

    def load(self, path: str | Path, dataset: str | None = None) -> list[Any]:
        """The samples of a file of `dataset` (None: its first), read by that dataset's loader."""
        loader = self.dataset(dataset).loader if dataset in self.dataset_names else None
        return imported(loader or self.loader)(path)

    def dataset(self, name: str) -> Dataset:
        return next(d for d in self.datasets if d.name == name)

    @property
    def dataset_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.datasets)

    def lexical_rule(self, category: int) -> int:
        """The LoCoMo category whose F1 rule scores a row of this kind."""
        return self.lexical_rules.get(int(category), PLAIN_RULE) if self.lexical_rules is not None else PLAIN_RULE

    def own_pins(self) -> tuple[Any, ...]:
        """Its pinned files beside its datasets' (`pins`)."""
        return tuple(imported(self.pins)) if self.pins else ()

    def own_peer_pins(self) -> tuple[Any, ...]:
        """Others' released results on it that its importers read (`peer_pins`), fetched by `fetch --peers`."""
        return tuple(imported(self.peer_pins)) if self.peer_pins else ()

    def judges(self, category: int) -> bool:
        """Whether the benchmark's judge scores a question of this kind."""
        return self.judged is None or category in self.judged

    @property
    def refusal_kinds(self) -> tuple[int, ...]:
        """The kinds its lexical rules score by the refusal rule (`REFUSAL_RULE`): a refusal is
        their right answer (LoCoMo's adversarial category 5)."""
        return tuple(k for k in self.category_names if self.lexical_rule(k) == REFUSAL_RULE)

    def marks(self, question_id: str) -> tuple[str, ...]:
        """The subsets (`id_marks`) a question belongs to: ("abstention",) for a LongMemEval `_abs` id."""
        return tuple(name for name, mark in self.id_marks.items() if mark in question_id)

    def units(self, count: int) -> str:
        """`10 conversations`, `1 question`."""
        return f"{count} {self.unit}" + ("" if count == 1 else "s")


#: LoCoMo is the default dataset's benchmark (a pack without a dataset name is LoCoMo's)
DEFAULT = "locomo"
#: the package whose packages are the built-in benchmarks
PACKAGE = "memorybench.benchmarks"
_LOCK = threading.Lock()
_BUILTIN: dict[str, Benchmark] = {}
_ALL: dict[str, Benchmark] = {}


def _builtins() -> dict[str, Benchmark]:
    """This folder's benchmarks (LoCoMo first): no plugin is loaded to find them."""
    with _LOCK:
        if not _BUILTIN:
            package = importlib.import_module(PACKAGE)
            found = [
                importlib.import_module(f"{PACKAGE}.{info.name}").BENCHMARK
                for info in pkgutil.iter_modules(package.__path__)
                if info.ispkg
            ]
            _BUILTIN.update((b.name, b) for b in sorted(found, key=lambda b: (b.name != DEFAULT, b.name)))
        return _BUILTIN


def benchmarks() -> dict[str, Benchmark]:
    """Every benchmark by name: this folder's packages (LoCoMo first), then the plugins'."""
    builtin = _builtins()
    with _LOCK:
        if not _ALL:
            from memorybench.plugins import plugin_benchmarks

            found = dict(builtin)
            for plugin, declared in plugin_benchmarks():
                if not isinstance(declared, (tuple, list)) or not all(isinstance(b, Benchmark) for b in declared):
                    raise UserError(
                        f"plugin {plugin}: BENCHMARKS is a tuple of memorybench.benchmark.Benchmark records, not {declared!r}"
                    )
                for benchmark in declared:
                    if benchmark.name in found:
                        raise UserError(f"benchmark {benchmark.name!r} is declared twice; rename the one of plugin {plugin}")
                    found[benchmark.name] = benchmark
            _ALL.update(found)
        return dict(_ALL)


def judge_protocols() -> dict[str, str]:
    """The judge protocols the built-in benchmarks own, by name (`memorybench.registry.JUDGES`
    asks this by name; a plugin's protocols register themselves when it is loaded)."""
    return {name: target for b in _builtins().values() for name, target in b.judge_protocols.items()}


def benchmark_scorers() -> dict[str, Any]:
    """The scorers the built-in benchmarks own, by name (`memorybench.registry.SCORERS` asks
    this by name; a plugin's scorers register themselves when it is loaded)."""
    return {s.name: s for b in _builtins().values() if b.scorers for s in imported(b.scorers)}


def block_keys() -> frozenset[str]:
    """The keys under which the benchmarks write a block of their own into a record every
    benchmark shares (each record's `blocks`)."""
    return frozenset(key for benchmark in benchmarks().values() for key in benchmark.blocks)


def own_tables() -> dict[str, OwnTable]:
    """Every benchmark's own report tables, by table name."""
    return {name: table for b in benchmarks().values() for name, table in b.report_tables.items()}


def benchmark_of_format(fmt: str) -> Benchmark | None:
    """The benchmark whose importer reads released format `fmt` (None: LoCoMo's importers)."""
    return next((b for b in benchmarks().values() if fmt in b.released_formats), None)


def datasets() -> dict[str, Dataset]:
    """Every dataset of every benchmark, by its config name (conf/dataset/<name>.yaml)."""
    return {d.name: d for b in benchmarks().values() for d in b.datasets}


def benchmark_of(dataset: str | None) -> Benchmark:
    """The benchmark a dataset config name belongs to (None: LoCoMo, the default dataset)."""
    if dataset is None:
        return _builtins()[DEFAULT]
    for found in (_builtins, benchmarks):  # a plugin is loaded only for a dataset no built-in has
        for benchmark in found().values():
            if dataset in benchmark.dataset_names:
                return benchmark
    known = ", ".join(datasets())
    raise UserError(
        f"dataset {dataset!r} belongs to no benchmark memorybench knows ({known}); choose one with dataset=NAME (conf/dataset/)"
    )


def default_dataset() -> Dataset:
    """The dataset a run or a check reads when none is named: the default benchmark's first
    (LoCoMo's locomo10)."""
    return _builtins()[DEFAULT].datasets[0]


def dataset_named(name: str) -> Dataset:
    """A dataset by its config name; one line naming the known ones otherwise."""
    return benchmark_of(name).dataset(name)


def benchmark_of_meta(data: Mapping[str, Any] | None) -> Benchmark:
    """The benchmark of a pack, from run_meta.json's `data` (an imported or older pack
    without a dataset name is LoCoMo's)."""
    name = (data or {}).get("name")
    try:
        return benchmark_of(str(name) if name else None)
    except UserError:
        return _builtins()[DEFAULT]


def _field(record: Any, key: str) -> Any:
    return record.get(key) if isinstance(record, Mapping) else getattr(record, key, None)


def benchmark_of_pack(meta: Any, metrics: Any = None) -> Benchmark:
    """Which benchmark a pack is, from its run_meta.json (and metrics.json), as a mapping or as its
    record: the `benchmark` it records (every pack written since benchmarks were recorded), else
    its dataset's name, else LoCoMo's (a pack imported or made before datasets were named). Every
    reader of a pack asks this."""
    for record in (meta, metrics):
        named = _field(record, "benchmark") if record is not None else None
        name = named.get("name") if isinstance(named, Mapping) else named
        if name:
            return benchmark_named(str(name))
    return benchmark_of_meta(_field(meta, "data") if meta is not None else None)


def recorded(benchmark: Benchmark) -> dict[str, str]:
    """What run_meta.json and metrics.json record of a pack's benchmark: its name and version."""
    return {"name": benchmark.name, "version": benchmark.version}


def benchmark_named(name: str | Mapping[str, Any] | None) -> Benchmark:
    """A benchmark by its own name (or a record's `benchmark`: {name, version}; absent: LoCoMo)."""
    if isinstance(name, Mapping):
        name = name.get("name")
    builtin = _builtins()
    if (name or DEFAULT) in builtin:
        return builtin[name or DEFAULT]
    return benchmarks().get(str(name), builtin[DEFAULT])


def __getattr__(name: str) -> Benchmark:
    """`LOCOMO`, `LONGMEMEVAL`: the built-in benchmarks' records, for the modules of their own
    packages and the tests (the core asks `benchmark_of*` and the record's fields)."""
    if name in ("LOCOMO", "LONGMEMEVAL"):
        return _builtins()[name.lower()]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
