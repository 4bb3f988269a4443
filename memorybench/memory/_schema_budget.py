"""How long a grammar-constrained JSON reply can be, and bounds that fit a token budget.

A server that compiles a JSON schema into a grammar (llama.cpp, the embedded model) can
only produce an instance of that schema. With every list bounded (`maxItems`) and every
free string bounded (`maxLength`), the longest instance is known before the call:
`worst_case_json` writes its shape (every list full, every optional property present,
the longest branch of a union, every string at its bound) the way llama.cpp's grammar
lets it be written (one optional space after each literal: `{ "name" : "..." , ... } `),
and `worst_case_tokens` counts it:

- the structure (braces, keys, separators, `null`, enum members) with the tokenizer
  given (the embedded model's own, `memorybench.llm.local.count_tokens`; by default `len`,
  one token per character, for a server whose tokenizer we do not have: `estimate_tokens`
  is for prose and errs low on JSON's punctuation), plus one token per string for the
  quote that may not merge with its neighbours;
- the content of each string at one token per character: a token of these vocabularies
  covers at least one ASCII character. The one gap: a character written as `\\uXXXX` or
  outside ASCII can take more than one token; such a reply can still reach max_tokens,
  and is then a counted failure that says so (`finish_reason length`), never a silent one.

`fit_bounds` lowers the configured string bound, then the list bound, until the worst
case fits a budget (the writer's `max_tokens`); the writer then asks for exactly that many
tokens and records the bounds it used.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memorybench.errors import UserError

#: tokens per character of string content in the worst case (ASCII: one at most)
TOKENS_PER_CHAR = 1
#: tokens allowed for the end of a reply (end-of-turn token) and tokenizer boundary effects
REPLY_MARGIN_TOKENS = 4
#: the shortest string bound `fit_bounds` lowers to before it lowers the list bound
MIN_CHARS = 16
#: a number's longest grammar form is unbounded; a generous cap (our schemas have none)
NUMBER_CHARS = 24

Count = Callable[[str], int]


class UnboundedSchema(ValueError):
    """A schema whose replies have no longest form (a list or string without a bound)."""


@dataclass(frozen=True)
class WorstCase:
    """The longest reply's structure (strings empty) and its string characters."""

    skeleton: str
    string_chars: int
    strings: int
    #: the instance itself, every string filled to its bound with "x" (for a reader and tests)
    filled: str

    def tokens(self, count: Count = len) -> int:
        return count(self.skeleton) + self.strings + self.string_chars * TOKENS_PER_CHAR + REPLY_MARGIN_TOKENS


def worst_case_json(schema: Mapping[str, Any], count: Count = len) -> WorstCase:
    """The longest instance of `schema` a grammar admits (see the module doc); `count`
    picks the longer branch of a union. UnboundedSchema when a list or string has no bound."""
    defs = dict(schema.get("$defs") or schema.get("definitions") or {})

    def resolve(node: Mapping[str, Any]) -> Mapping[str, Any]:
        ref = node.get("$ref")
        if ref is None:
            return node
        name = str(ref).rsplit("/", 1)[-1]
        if name not in defs:
            raise UnboundedSchema(f"unresolved $ref {ref}")
        return resolve(defs[name])

    def visit(node: Mapping[str, Any], where: str) -> WorstCase:
        node = resolve(node)
        branches = node.get("anyOf") or node.get("oneOf")
        if branches:
            cases = [visit(b, where) for b in branches]
            return max(cases, key=lambda c: c.tokens(count))
        if "const" in node:
            text = json.dumps(node["const"]) + " "
            return WorstCase(text, 0, 0, text)
        if "enum" in node:
            text = max((json.dumps(v) + " " for v in node["enum"]), key=count)
            return WorstCase(text, 0, 0, text)
        kind = node.get("type")
        if isinstance(kind, list):
            return visit({"anyOf": [{**node, "type": k} for k in kind]}, where)
        if kind == "string":
            if "maxLength" not in node:
                raise UnboundedSchema(f"the string at {where or 'the top'} has no maxLength")
            n = int(node["maxLength"])
            return WorstCase('"" ', n, 1, '"' + "x" * n + '" ')
        if kind == "array":
            if "maxItems" not in node:
                raise UnboundedSchema(f"the list at {where or 'the top'} has no maxItems")
            n = int(node["maxItems"])
            item = visit(node.get("items") or {"type": "null"}, f"{where}[]")
            inner, full = ", ".join([item.skeleton] * n), ", ".join([item.filled] * n)
            return WorstCase(f"[ {inner}] ", item.string_chars * n, item.strings * n, f"[ {full}] ")
        if kind == "object" or "properties" in node:
            if node.get("additionalProperties") not in (None, False):
                raise UnboundedSchema(f"the object at {where or 'the top'} allows any other property")
            parts, full, chars, strings = [], [], 0, 0
            for key, sub in (node.get("properties") or {}).items():
                value = visit(sub, f"{where}.{key}" if where else key)
                parts.append(f"{json.dumps(key)} : {value.skeleton}")
                full.append(f"{json.dumps(key)} : {value.filled}")
                chars, strings = chars + value.string_chars, strings + value.strings
            return WorstCase("{ " + ", ".join(parts) + "} ", chars, strings, "{ " + ", ".join(full) + "} ")
        if kind == "null":
            return WorstCase("null ", 0, 0, "null ")
        if kind == "boolean":
            return WorstCase("false ", 0, 0, "false ")
        if kind in ("integer", "number"):
            text = "-" + "9" * NUMBER_CHARS + " "
            return WorstCase(text, 0, 0, text)
        raise UnboundedSchema(f"the value at {where or 'the top'} has no type the writer bounds ({kind!r})")

    return visit(schema, "")


def worst_case_tokens(schema: Mapping[str, Any], count: Count = len) -> int:
    """Tokens of the longest reply a grammar built from `schema` admits (module doc)."""
    return worst_case_json(schema, count).tokens(count)


@dataclass(frozen=True)
class FittedBounds:
    """The bounds a task's schema was sent with and its worst case, in tokens."""

    schema: dict[str, Any]
    max_items: int
    max_chars: int
    worst_case_tokens: int
    #: the bounds asked for (writer.json_max_items or the method's, writer.json_max_chars)
    asked_items: int
    asked_chars: int

    @property
    def tightened(self) -> bool:
        return (self.max_items, self.max_chars) != (self.asked_items, self.asked_chars)

    def record(self) -> dict[str, Any]:
        return {
            "max_items": self.max_items,
            "max_chars": self.max_chars,
            "worst_case_tokens": self.worst_case_tokens,
            "tightened": self.tightened,
        }


def fit_bounds(
    bound: Callable[[int, int], dict[str, Any]],
    *,
    max_items: int,
    max_chars: int,
    budget: int,
    count: Count = len,
    what: str = "the reply",
) -> FittedBounds:
    """The largest bounds, starting from (`max_items`, `max_chars`), whose schema
    (`bound(items, chars)`) has a worst case within `budget` tokens: the string bound is
    lowered first (to `MIN_CHARS`), then the list bound (to 1), then the string bound
    below `MIN_CHARS` (to 1). A UserError when nothing fits."""

    def worst(items: int, chars: int) -> tuple[dict[str, Any], int]:
        schema = bound(items, chars)
        return schema, worst_case_tokens(schema, count)

    def fitted(items: int, chars: int, schema: dict[str, Any], tokens: int) -> FittedBounds:
        return FittedBounds(schema, items, chars, tokens, max_items, max_chars)

    schema, tokens = worst(max_items, max_chars)
    if tokens <= budget:
        return fitted(max_items, max_chars, schema, tokens)
    floor = min(MIN_CHARS, max_chars)
    # (items, lowest string bound tried): every item count down to 1 with strings of at least
    # `floor` characters, then one item with shorter strings
    for items, lowest in [*((n, floor) for n in range(max_items, 0, -1)), (1, 1)]:
        lo, hi, best = lowest, max_chars, None
        while lo <= hi:  # the longest string bound that fits (the worst case grows with it)
            mid = (lo + hi) // 2
            schema_mid, tokens_mid = worst(items, mid)
            if tokens_mid <= budget:
                best, lo = (mid, schema_mid, tokens_mid), mid + 1
            else:
                hi = mid - 1
        if best is not None:
            chars, schema, tokens = best
            return fitted(items, chars, schema, tokens)
    raise UserError(
        f"{what}: even one list item and one-character strings take {worst(1, 1)[1]} tokens at most, over "
        f"writer.max_tokens={budget}; raise writer.max_tokens"
    )
