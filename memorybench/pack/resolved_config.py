"""A pack's config.resolved.yaml as plain data: what OmegaConf reads, without OmegaConf.

`verify` reads this file in every pack it checks (and `compare` in every pack it pairs),
and importing OmegaConf and building its node tree cost more than most of a small pack's
checks (issue 31). The file is written resolved (`OmegaConf.to_yaml` of a resolved
config), so its plain data is `OmegaConf.to_container(OmegaConf.load(path), resolve=True)`,
read here by OmegaConf's own YAML rules (`omegaconf._utils.get_yaml_loader`): YAML 1.2
floats such as `1e-3`, no timestamps (a date stays a string), a duplicate key refused;
libyaml parses where it is installed. Whatever this reading might give differently is
left to OmegaConf itself: a file that does not parse, a top level that is not a mapping, a
key that is not a string, a value outside YAML's plain types, or a string holding an
interpolation (`${`). `tests/pack/test_resolved_config.py` compares both readings.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import yaml

__all__ = ["load_resolved_config", "resolved_config_of"]

#: OmegaConf's float rule (YAML 1.2: an exponent without a dot is a float)
_FLOAT = re.compile(
    r"""^(?:
     [-+]?[0-9]+(?:_[0-9]+)*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?[0-9]+(?:_[0-9]+)*(?:[eE][-+]?[0-9]+)
    |\.[0-9]+(?:_[0-9]+)*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9]+(?:_[0-9]+)*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_PLAIN = (str, int, float, bool, type(None))


class _DuplicateKey(ValueError):
    pass


def _loader() -> type:
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc,valid-type]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            keys = [k.value for k, _ in node.value if k.tag == yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG]
            if len(keys) != len(set(keys)):
                raise _DuplicateKey(keys)
            return super().construct_mapping(node, deep=deep)

    Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in rules if tag != _TIMESTAMP] for first, rules in Loader.yaml_implicit_resolvers.items()
    }
    return Loader


_LOADER: type | None = None


def load_resolved_config(path: Path) -> Any:
    """The file's config as plain data (dicts, lists, scalars). Raises what OmegaConf raises
    for a file it cannot load (its message naming the file)."""
    plain = _plain_reading(path.read_text(encoding="utf-8"))
    return plain if plain is not None else _omegaconf_reading(path)


def resolved_config_of(text: str) -> Any:
    """`load_resolved_config` of the file's text (a pack read through its storage)."""
    plain = _plain_reading(text)
    return plain if plain is not None else _omegaconf_reading(io.StringIO(text))


def _plain_reading(text: str) -> dict[str, Any] | None:
    """The config by OmegaConf's rules, or None where OmegaConf itself must read it."""
    global _LOADER
    if _LOADER is None:
        _LOADER = _loader()
    try:
        data = yaml.load(text, Loader=_LOADER)  # noqa: S506  (a safe loader: OmegaConf's rules over yaml's SafeLoader)
    except (yaml.YAMLError, _DuplicateKey):
        return None  # OmegaConf raises its own message
    return data if isinstance(data, dict) and data and _plain(data) else None


def _omegaconf_reading(source: Path | io.StringIO) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(source), resolve=True)


def _plain(value: Any) -> bool:
    """Only YAML's plain types, string keys, and no interpolation left to resolve."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, str):
        return "${" not in value
    return isinstance(value, _PLAIN)
