"""BEAM's judge requests, byte for byte as the pinned compute_metrics.py builds them, and ours.

The prompts are string literals of the pinned `src/prompts.py`; the way they are filled is code of
the pinned `src/evaluation/compute_metrics.py`. Both files are read through `pin_path` (sha256
first) and parsed with `ast`, never imported (importing them would run `nltk.download`, load
sentence-transformers and read the authors' `llms_config.json`):

- the rubric judge (every `evaluate_<ability>`): `unified_llm_judge_base_prompt`
  `.replace("<rubric_item>", item).replace("<llm_response>", llm_response)`, sent as one user
  message (`model.invoke(prompt)`). The prompt's `<question>` slot is never filled: the judge is
  sent the literal text `<question>`. The replacements run one after the other over the whole
  text, so a rubric item that contains `<llm_response>` has the answer put into it, and every
  occurrence of a slot is replaced. `rubric_chain` reads this chain out of each ten functions and
  refuses a file where they differ; `official_rubric_prompt` applies it.
- ours (`our_rubric_prompt`): the same template with its three slots, the question too, filled
  in one pass over the template: a value is never searched for slots.
- event ordering's fact extraction (`extract_facts`, whose reply the official code discards):
  `break_paragraph_to_facts_detailed_prompt.replace("<question>", question).replace("<input_text>",
  paragraph)`, one user message.
- event ordering's alignment (`llm_equivalence(first_paragraph=reference item, second_paragraph=
  answer line)`): a system message (a literal, with its indentation) and a user message (an
  f-string of the two snippets), rebuilt from the function's parsed dict literals.

The judge model is `gpt_llm` of src/llm.py (gpt-4.1-mini, temperature 0, through langchain's
ChatOpenAI: no max_tokens, no response format), which run_evaluation.py's `__main__` passes.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memorybench.benchmarks.beam.data import ABILITIES
from memorybench.benchmarks.beam.pins import COMPUTE_METRICS, PROMPTS
from memorybench.data.pins import Pin, pin_path
from memorybench.errors import UserError

__all__ = [
    "FACTS_PROMPT",
    "JUDGE_MODEL",
    "JUDGE_PROMPT",
    "JUDGE_TEMPERATURE",
    "SLOTS",
    "ReplaceChain",
    "equivalence_messages",
    "fact_extraction_chain",
    "fact_extraction_messages",
    "fact_extraction_prompt",
    "judge_template",
    "equivalence_parts",
    "official_rubric_messages",
    "official_rubric_prompt",
    "our_rubric_messages",
    "our_rubric_prompt",
    "prompt_literal",
    "rubric_chain",
]

#: the names of the two prompts of src/prompts.py the scoring sends
JUDGE_PROMPT = "unified_llm_judge_base_prompt"
FACTS_PROMPT = "break_paragraph_to_facts_detailed_prompt"
#: the rubric judge's slots, as the template writes them
SLOTS = ("<question>", "<rubric_item>", "<llm_response>")
#: src/llm.py's `gpt_llm_obj` (a test reads both from the pinned file)
JUDGE_MODEL = "gpt-4.1-mini"
JUDGE_TEMPERATURE = 0.0

_PathLike = str | os.PathLike[str] | None


@dataclass(frozen=True)
class ReplaceChain:
    """`TEMPLATE.replace(OLD, name).replace(...)` as a function of compute_metrics.py writes it."""

    #: the template's name in src/prompts.py
    template: str
    #: (the literal replaced, the function's variable put in its place), in the order they run
    steps: tuple[tuple[str, str], ...]

    def apply(self, template: str, values: Mapping[str, str]) -> str:
        """What the chain gives: each `str.replace` in turn over the whole text."""
        text = template
        for old, name in self.steps:
            text = text.replace(old, values[name])
        return text


def prompt_literal(name: str, pins: _PathLike = None) -> str:
    """A module-level string of the pinned src/prompts.py, as Python reads it."""
    found = _literals(pin_path(PROMPTS, pins))
    if name not in found:
        raise UserError(f"{PROMPTS.url} has no string {name} at the pinned commit; the pin is broken")
    return found[name]


def judge_template(pins: _PathLike = None) -> str:
    """`unified_llm_judge_base_prompt`, with its three slots (`SLOTS`)."""
    return prompt_literal(JUDGE_PROMPT, pins)


def rubric_chain(ability: str, pins: _PathLike = None) -> ReplaceChain:
    """How `evaluate_<ability>` fills the judge prompt (the same chain in all ten, or the pin is broken)."""
    if ability not in ABILITIES:
        raise UserError(f"BEAM has no ability {ability!r}; the abilities are {', '.join(ABILITIES)}")
    chains = _rubric_chains(pin_path(COMPUTE_METRICS, pins))
    return chains[ability]


def official_rubric_prompt(rubric_item: str, llm_response: str, *, ability: str = ABILITIES[0], pins: _PathLike = None) -> str:
    """The text compute_metrics.py sends for one rubric item: `<question>` left as it is."""
    return rubric_chain(ability, pins).apply(judge_template(pins), {"item": rubric_item, "llm_response": llm_response})


def our_rubric_prompt(question: str, rubric_item: str, llm_response: str, *, pins: _PathLike = None) -> str:
    """The same prompt with the question filled in too (what the prompt says the judge checks),
    each slot of the template filled once, in one pass: a value is never searched for slots."""
    template = judge_template(pins)
    values = dict(zip(SLOTS, (question, rubric_item, llm_response)))
    out, at = [], 0
    while True:
        found = [(template.find(slot, at), slot) for slot in SLOTS if template.find(slot, at) >= 0]
        if not found:
            return "".join(out) + template[at:]
        start, slot = min(found)
        out.append(template[at:start] + values[slot])
        at = start + len(slot)


def official_rubric_messages(
    rubric_item: str, llm_response: str, *, ability: str = ABILITIES[0], pins: _PathLike = None
) -> tuple[dict[str, str], ...]:
    """`model.invoke(prompt)` with a string: one user message."""
    return ({"role": "user", "content": official_rubric_prompt(rubric_item, llm_response, ability=ability, pins=pins)},)


def our_rubric_messages(
    question: str, rubric_item: str, llm_response: str, *, pins: _PathLike = None
) -> tuple[dict[str, str], ...]:
    return ({"role": "user", "content": our_rubric_prompt(question, rubric_item, llm_response, pins=pins)},)


def fact_extraction_chain(pins: _PathLike = None) -> ReplaceChain:
    """How `extract_facts` fills `break_paragraph_to_facts_detailed_prompt`."""
    return _facts_chain(pin_path(COMPUTE_METRICS, pins))


def fact_extraction_prompt(paragraph: str, question: str, *, pins: _PathLike = None) -> str:
    """The text of event ordering's fact-extraction call (its reply is thrown away by the official code)."""
    return fact_extraction_chain(pins).apply(prompt_literal(FACTS_PROMPT, pins), {"question": question, "paragraph": paragraph})


def fact_extraction_messages(paragraph: str, question: str, *, pins: _PathLike = None) -> tuple[dict[str, str], ...]:
    return ({"role": "user", "content": fact_extraction_prompt(paragraph, question, pins=pins)},)


def equivalence_messages(first: str, second: str, *, pins: _PathLike = None) -> tuple[dict[str, str], ...]:
    """`llm_equivalence(first_paragraph=first, second_paragraph=second)`'s two messages: the
    reference item is the first snippet, the answer's line the second."""
    system, user = _equivalence_parts(pin_path(COMPUTE_METRICS, pins))
    values = {"first_paragraph": first, "second_paragraph": second}
    return (
        {"role": "system", "content": system},
        {"role": "user", "content": "".join(values[p[1]] if p[0] == "slot" else p[1] for p in user)},
    )


def equivalence_parts(pins: _PathLike = None) -> tuple[str, tuple[tuple[str, str], ...]]:
    """llm_equivalence's system message and its user message as ("text", literal) / ("slot", name) parts."""
    return _equivalence_parts(pin_path(COMPUTE_METRICS, pins))


# -- reading the pinned files ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _literals(path: Path) -> dict[str, str]:
    tree = ast.parse(path.read_bytes().decode("utf-8"), filename=str(path))
    found: dict[str, str] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            found[node.targets[0].id] = node.value.value
    return found


@functools.lru_cache(maxsize=None)
def _functions(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_bytes().decode("utf-8"), filename=str(path))
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def _function(path: Path, pin: Pin, name: str) -> ast.FunctionDef:
    found = _functions(path).get(name)
    if found is None:
        raise UserError(f"{pin.url} has no function {name} at the pinned commit; the pin is broken")
    return found


def _chain_of(fn: ast.FunctionDef, pin: Pin) -> ReplaceChain:
    """The one `prompt = NAME.replace(...)...` assignment of a function, as a `ReplaceChain`."""
    assigned = [
        n.value
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Name)
        and n.targets[0].id == "prompt"
    ]
    if len(assigned) != 1:
        raise UserError(f"{pin.url}: {fn.name} does not build one `prompt`; the pin is broken")
    steps: list[tuple[str, str]] = []
    node = assigned[0]
    while isinstance(node, ast.Call):
        func = node.func
        if (
            not isinstance(func, ast.Attribute)
            or func.attr != "replace"
            or node.keywords
            or len(node.args) != 2
            or not isinstance(node.args[0], ast.Constant)
            or not isinstance(node.args[0].value, str)
            or not isinstance(node.args[1], ast.Name)
        ):
            raise UserError(f"{pin.url}: {fn.name} builds its prompt other than by str.replace(literal, name); the pin is broken")
        steps.append((node.args[0].value, node.args[1].id))
        node = func.value
    if not isinstance(node, ast.Name) or not steps:
        raise UserError(f"{pin.url}: {fn.name}'s prompt is not a template's .replace chain; the pin is broken")
    return ReplaceChain(node.id, tuple(reversed(steps)))


@functools.lru_cache(maxsize=None)
def _rubric_chains(path: Path) -> dict[str, ReplaceChain]:
    chains = {
        ability: _chain_of(_function(path, COMPUTE_METRICS, f"evaluate_{ability}"), COMPUTE_METRICS) for ability in ABILITIES
    }
    if len(set(chains.values())) != 1 or next(iter(chains.values())).template != JUDGE_PROMPT:
        raise UserError(
            f"{COMPUTE_METRICS.url}: the ten evaluate_* functions fill the judge prompt differently; the pin is broken"
        )
    return chains


@functools.lru_cache(maxsize=None)
def _facts_chain(path: Path) -> ReplaceChain:
    chain = _chain_of(_function(path, COMPUTE_METRICS, "extract_facts"), COMPUTE_METRICS)
    if chain.template != FACTS_PROMPT:
        raise UserError(f"{COMPUTE_METRICS.url}: extract_facts fills {chain.template}, not {FACTS_PROMPT}; the pin is broken")
    return chain


@functools.lru_cache(maxsize=None)
def _equivalence_parts(path: Path) -> tuple[str, tuple[tuple[str, str], ...]]:
    """llm_equivalence's system content (a literal) and its user content as (kind, text) parts:
    ("text", literal) or ("slot", parameter name), from the f-string."""
    fn = _function(path, COMPUTE_METRICS, "llm_equivalence")
    contents: dict[str, ast.expr] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Dict):
            fields = {k.value: v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)}
            role = fields.get("role")
            if isinstance(role, ast.Constant) and "content" in fields:
                contents[str(role.value)] = fields["content"]
    system, user = contents.get("system"), contents.get("user")
    broken = UserError(
        f"{COMPUTE_METRICS.url}: llm_equivalence's messages are not a literal system message and an "
        "f-string user message; the pin is broken"
    )
    if not (isinstance(system, ast.Constant) and isinstance(system.value, str) and isinstance(user, ast.JoinedStr)):
        raise broken
    parts: list[tuple[str, str]] = []
    for value in user.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(("text", value.value))
        elif (
            isinstance(value, ast.FormattedValue)
            and isinstance(value.value, ast.Name)
            and value.conversion == -1
            and value.format_spec is None
            and value.value.id in ("first_paragraph", "second_paragraph")
        ):
            parts.append(("slot", value.value.id))
        else:
            raise broken
    return system.value, tuple(parts)
