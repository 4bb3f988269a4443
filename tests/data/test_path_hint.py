"""run_meta.json's `data` names the dataset by its pin and sha256; the path is a hint with the
home folder written `~`, so a shared pack carries no user name, and readers still find it."""

from __future__ import annotations

import shutil
from pathlib import Path

from omegaconf import OmegaConf

from memorybench.benchmarks.locomo.pins import LOCOMO10
from memorybench.data.source import path_hint, resolve_dataset
from memorybench.pack.walk import dataset_of

MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini_locomo.json"


def test_a_path_under_home_is_recorded_with_a_tilde(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    copy = tmp_path / "data" / "mini.json"
    copy.parent.mkdir()
    shutil.copy(MINI, copy)
    path, info = resolve_dataset(OmegaConf.create({"name": "locomo10", "path": str(copy)}), None)
    assert path == copy and info["path"] == "~/data/mini.json" and str(tmp_path) not in str(info)
    conversations, found, note = dataset_of(info)  # a reader on the same machine still finds it
    assert note is None and found == copy and conversations


def test_the_pinned_dataset_is_named_by_its_pin(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    pins = tmp_path / ".cache" / "pins"
    # the pin's bytes are not the point here (pin_path checks them): where it lies is
    monkeypatch.setattr("memorybench.data.source.pin_path", lambda pin, folder: Path(folder) / pin.relpath)
    _, info = resolve_dataset(OmegaConf.create({"name": "locomo10", "path": None}), pins)
    assert info["pin"] == LOCOMO10.relpath and info["sha256"] == LOCOMO10.sha256 and info["pinned"] is True
    assert info["path"] == f"~/.cache/pins/{LOCOMO10.relpath}"


def test_a_path_outside_home_stays_as_it_is(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert path_hint(MINI) == str(MINI)
