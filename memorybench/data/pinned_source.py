"""Functions and strings taken out of a pinned third-party Python file, never imported.

A benchmark's own evaluation code holds its prompts inside functions (LongMemEval's
`get_anscheck_prompt` picks one of five templates by question type). Retyping them would
let a copy drift from the original; importing the file would run its imports (openai,
torch, transformers) and module code. Instead the file is read through `pin_path` (its
sha256 checked first), parsed with `ast`, and

- `pinned_function` compiles one top-level function alone and runs its definition in a
  namespace with no builtins but the few it is allowed, after checking that its body only
  branches, assigns, formats strings and raises: no import, no call but `str.format`, no
  attribute but `format`, no name outside its parameters, locals and the allowed ones. The
  function object then gives exactly the bytes the original gives.
- `function_node` gives the parsed function, for reading its string literals in place.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memorybench.data.pins import Pin, pin_path
from memorybench.errors import UserError

__all__ = ["function_node", "pinned_function", "string_constants"]

#: the statements and expressions a function run by `pinned_function` may contain
_ALLOWED_NODES = (
    ast.FunctionDef,
    ast.arguments,
    ast.arg,
    ast.Return,
    ast.If,
    ast.Assign,
    ast.Raise,
    ast.Pass,
    ast.Expr,
    ast.Name,
    ast.Load,
    ast.Store,
    ast.Constant,
    ast.Call,
    ast.Attribute,
    ast.Compare,
    ast.In,
    ast.NotIn,
    ast.Eq,
    ast.NotEq,
    ast.Is,
    ast.IsNot,
    ast.List,
    ast.Tuple,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.UnaryOp,
    ast.Not,
)


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_bytes().decode("utf-8"), filename=str(path))


def function_node(pin: Pin, name: str, pins: str | os.PathLike[str] | None = None) -> ast.FunctionDef:
    """The top-level function `name` of the pinned file, parsed (the file's sha256 checked first)."""
    path = pin_path(pin, pins)
    return _function_node(path, name, pin.url)


@functools.lru_cache(maxsize=None)
def _function_node(path: Path, name: str, url: str) -> ast.FunctionDef:
    for node in _parse(path).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise UserError(f"{url} has no function {name} at the pinned commit; the pin is broken")


def string_constants(node: ast.AST) -> list[str]:
    """Every string literal inside `node`, in source order."""
    found = [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return [n.value for n in sorted(found, key=lambda n: (n.lineno, n.col_offset))]


def _check_plain(fn: ast.FunctionDef, allowed_names: frozenset[str], url: str) -> None:
    """Refuse a function that does more than branch, assign, format strings and raise."""
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    local = {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    known = params | local | allowed_names
    for node in ast.walk(fn):
        problem = None
        if not isinstance(node, _ALLOWED_NODES):
            problem = f"a {type(node).__name__}"
        elif isinstance(node, ast.FunctionDef) and (node is not fn or node.decorator_list):
            problem = "a nested or decorated function"
        elif isinstance(node, ast.Attribute) and node.attr != "format":
            problem = f"the attribute .{node.attr}"
        elif isinstance(node, ast.Call) and not (isinstance(node.func, ast.Attribute) and node.func.attr == "format"):
            problem = "a call other than str.format"
        elif isinstance(node, ast.Name) and node.id not in known:
            problem = f"the name {node.id}"
        if problem:
            raise UserError(f"{url}: {fn.name} holds {problem}, which memorybench does not run; the pin is broken")


def pinned_function(
    pin: Pin, name: str, pins: str | os.PathLike[str] | None = None, *, builtins: dict[str, Any] | None = None
) -> Callable[..., Any]:
    """The top-level function `name` of the pinned file, defined alone (see the module docstring).

    `builtins` are the only builtins it sees (e.g. `{"NotImplementedError": NotImplementedError}`)."""
    path = pin_path(pin, pins)
    allowed = dict(builtins or {})
    return _pinned_function(path, name, pin.url, tuple(sorted(allowed.items(), key=lambda kv: kv[0])))


@functools.lru_cache(maxsize=None)
def _pinned_function(path: Path, name: str, url: str, builtins: tuple[tuple[str, Any], ...]) -> Callable[..., Any]:
    fn = _function_node(path, name, url)
    _check_plain(fn, frozenset(k for k, _ in builtins), url)
    module = ast.Module(body=[fn], type_ignores=[])
    namespace: dict[str, Any] = {"__builtins__": dict(builtins)}
    exec(compile(module, f"<pinned {url}>", "exec"), namespace)  # noqa: S102 (a checked, hash-pinned function)
    return namespace[name]
