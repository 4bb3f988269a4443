"""`pack.resolved_config` reads config.resolved.yaml as OmegaConf does (issue 31: verify
without OmegaConf): every experiment's composed config as the qa stage writes it, the
golden pack's, and YAML whose reading differs between YAML 1.1 and OmegaConf."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hydra import initialize_config_dir
from omegaconf import OmegaConf

from memorybench import CONF_DIR
from memorybench.config import load_component_configs
from memorybench.pack.resolved_config import load_resolved_config, resolved_config_of
from memorybench.plan import compose_spec
from memorybench.secrets import clean_config

GOLDEN = Path(__file__).parent / "golden_mini_pack" / "config.resolved.yaml"


def _omegaconf(path: Path):
    return OmegaConf.to_container(OmegaConf.load(path), resolve=True)


def _typed(value):
    """The value with every scalar's type beside it (1 and 1.0 and True differ; nan equals nan)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return ["float", "nan"]
    return [type(value).__name__, value]


def test_the_golden_packs_config_reads_the_same() -> None:
    assert _typed(load_resolved_config(GOLDEN)) == _typed(_omegaconf(GOLDEN))


def test_every_experiments_written_config_reads_the_same(tmp_path: Path) -> None:
    """Each experiment (and the default run) composed, written as the qa stage writes it."""
    load_component_configs()
    experiments = sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml") if not p.stem.endswith("_schema"))
    assert experiments
    checked = 0
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="test_resolved_config"):
        for overrides in ([], *([f"experiment={e}"] for e in experiments)):
            try:
                spec = compose_spec(overrides)
            except Exception:  # noqa: BLE001  (an experiment that needs more settings: not this test's subject)
                continue
            path = tmp_path / f"{checked}.yaml"
            path.write_text(OmegaConf.to_yaml(clean_config(spec.cfg)), encoding="utf-8")
            assert _typed(load_resolved_config(path)) == _typed(_omegaconf(path)), overrides
            checked += 1
    assert checked >= len(experiments) // 2, checked


@pytest.mark.parametrize(
    "text",
    [
        "lr: 1e-3\nb: 1_000\nc: 1.5e+2\nd: .5\ne: -.inf\nf: .nan\ng: 0x1f\nh: 0o17\ni: 010\n",
        "day: 2024-01-01\nwhen: 2001-12-14t21:59:43.10-05:00\n",
        "a: yes\nb: no\nc: on\nd: off\ne: ~\nf: null\ng: 'yes'\nh: \"1e-3\"\n",
        'text: |\n  two\n  lines\nfolded: >\n  one\n  line\nuni: "caf\\u00e9 \\U0001F600"\nmissing: ???\n',
        "nested:\n  list: [1, 2.0, three, {x: [true]}]\n  empty: {}\n  none: []\n",
        "a: 1\na: 2\n",  # a duplicate key: both refuse
        "base: 1\nref: ${base}\n",  # an interpolation: resolved, as OmegaConf resolves it
        "esc: \\${literal}\n",
        "- 1\n- 2\n",  # not a mapping
        "1: one\ntrue: yes\n",  # keys that are not strings
        "a: !!binary aGVsbG8=\n",
        "",
        "a: [unclosed\n",
    ],
)
def test_yaml_whose_reading_could_differ(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.resolved.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        expected = ("ok", json.dumps(_typed(_omegaconf(path)), default=repr))
    except Exception as e:  # noqa: BLE001
        expected = ("error", f"{type(e).__name__}: {e}")
    try:
        got = ("ok", json.dumps(_typed(load_resolved_config(path)), default=repr))
    except Exception as e:  # noqa: BLE001
        got = ("error", f"{type(e).__name__}: {e}")
    assert got == expected
    # the text as `compare` reads it through a pack's storage, against OmegaConf.create's reading
    try:
        created = ("ok", json.dumps(_typed(OmegaConf.to_container(OmegaConf.create(text), resolve=True)), default=repr))
    except Exception as e:  # noqa: BLE001  (the message names no file here: the error's type is compared)
        created = ("error", type(e).__name__)
    try:
        of_text = ("ok", json.dumps(_typed(resolved_config_of(text)), default=repr))
    except Exception as e:  # noqa: BLE001
        of_text = ("error", type(e).__name__)
    assert of_text == created
