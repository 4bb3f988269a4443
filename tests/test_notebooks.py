"""Every notebook under notebooks/ runs headless on a small design made here (nbclient, python3 kernel)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from tracking.pack_factory import add_autorater, make_packs

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def design(tmp_path_factory):
    root = tmp_path_factory.mktemp("notebooks")
    full, _ = make_packs(root)
    add_autorater(full)
    path = root / "design.yaml"
    path.write_text(yaml.safe_dump({"name": "nb", "packs": [str(root / "packs")], "bootstrap": {"resamples": 200}}))
    return path


@pytest.fixture()
def venv_kernel(tmp_path, monkeypatch):
    """A `python3` kernel spec that runs this interpreter (the venv's), ahead of any other on the machine."""
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (memorybench venv)",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return "python3"


def test_there_are_notebooks():
    assert {p.name for p in NOTEBOOKS} >= {"report.ipynb", "collected.ipynb"}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_headless(notebook, design, venv_kernel, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("MEMORYBENCH_DESIGN", str(design))
    monkeypatch.setenv("MEMORYBENCH_REPORT_OUT", str(tmp_path / "out"))
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, kernel_name=venv_kernel, timeout=180, resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    if "Image(" in "".join(cell.source for cell in nb.cells):
        assert any("image/png" in o.get("data", {}) for o in outputs)
    assert any("text/html" in o.get("data", {}) for o in outputs)  # tables shown as DataFrames
    assert (tmp_path / "out").is_dir()
