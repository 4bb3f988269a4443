"""What the driver of a submitit sweep says (`hydra/launcher=submitit_local|submitit_slurm`).

hydra-submitit-launcher submits every job and then waits on each result in turn, saying
nothing. `SubmititProgress`, a Hydra callback (named in conf/config.yaml), watches the
sweep's submitit folder from the driver instead: each job's state change as its files
appear (`<id>_submitted.pkl`: submitted; its log: running; `<id>_0_result.pkl`: succeeded or
failed, from the JobReturn inside), a `memorybench.progress` line of jobs ended, and a final
summary once every submitted job has a result (or when the sweep ends). Nothing under the
launcher changes: it only reads the files submitit writes anyway. `MEMORYBENCH_PROGRESS=off`
silences it as it does every progress reporter.
"""

from __future__ import annotations

import pickle
import sys
import threading
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from memorybench.progress import Progress, progress_enabled

__all__ = ["SubmititProgress", "SubmititWatcher"]


def _say(text: str) -> None:
    print(f"[submitit] {text}", file=sys.stderr, flush=True)


class SubmititWatcher:
    """Polls a submitit folder (`<sweep dir>/.submitit/<job id>/...`) and says what changed."""

    def __init__(self, folder: Path, *, poll_s: float = 1.0, say: Any = _say) -> None:
        self.folder, self.poll_s, self.say = folder, poll_s, say
        self.states: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._summarized = False
        self._bar: Progress | None = None

    def start(self) -> SubmititWatcher:
        self._thread = threading.Thread(target=self._run, name="submitit-progress", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.poll()
        self.summary()

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            self.poll()
            if self.states and all(s in ("succeeded", "failed") for s in self.states.values()):
                self.summary()
                return

    def poll(self) -> None:
        if not self.folder.is_dir():
            return
        for submitted in sorted(self.folder.rglob("*_submitted.pkl")):
            job = submitted.name.removesuffix("_submitted.pkl")
            state = self._state(submitted.parent, job)
            if self.states.get(job) != state:
                self.states[job] = state
                self.say(f"job {job}{self.labels.get(job, '')}: {state}")
        if self.states:
            if self._bar is None:
                self._bar = Progress("sweep", len(self.states), unit="jobs", rate_unit="job", spend=None, say=self.say)
            self._bar.total = len(self.states)
            ended = sum(1 for s in self.states.values() if s in ("succeeded", "failed"))
            if ended > self._bar.done:
                self._bar.update(ended - self._bar.done)

    def _state(self, folder: Path, job: str) -> str:
        result = next(iter(sorted(folder.glob(f"{job}_*result.pkl"))), folder / f"{job}_result.pkl")  # <id>_<task>_result.pkl
        if result.is_file():
            return self._outcome(job, result)
        if any(folder.glob(f"{job}_*log.out")) or any(folder.glob(f"{job}_*log.err")):
            return "running"
        return "submitted"

    def _outcome(self, job: str, path: Path) -> str:
        """succeeded, or failed: submitit's own error, or Hydra's JobReturn with a FAILED status."""
        try:
            with path.open("rb") as f:
                kind, value = pickle.load(f)
        except Exception:  # noqa: BLE001 - half written or unreadable here: still ended
            return "ended"
        if kind != "success":
            return "failed"
        from hydra.core.utils import JobStatus

        overrides = getattr(value, "overrides", None)
        if overrides:
            self.labels[job] = f" ({' '.join(overrides)})"
        return "failed" if getattr(value, "status", None) == JobStatus.FAILED else "succeeded"

    def summary(self) -> None:
        if self._summarized or not self.states:
            return
        self._summarized = True
        if self._bar is not None:
            self._bar.close()
        counts = {s: sum(1 for v in self.states.values() if v == s) for s in ("succeeded", "failed")}
        rest = len(self.states) - counts["succeeded"] - counts["failed"]
        self.say(
            f"{len(self.states)} job(s): {counts['succeeded']} succeeded, {counts['failed']} failed"
            + (f", {rest} not ended" if rest else "")
            + f"; logs in {self.folder}"
        )


class SubmititProgress(Callback):
    """Hydra callback: a `SubmititWatcher` over the sweep's submitit folder while a submitit sweep runs."""

    def __init__(self, poll_s: float = 1.0) -> None:
        self.poll_s = poll_s
        self._watcher: SubmititWatcher | None = None

    def __getstate__(self) -> dict[str, Any]:
        # submitit pickles the launcher, and with it Hydra's callbacks: the watcher stays in the driver
        return {"poll_s": self.poll_s, "_watcher": None}

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        launcher = config.hydra.get("launcher") or {}
        if "submitit" not in str(launcher.get("_target_", "")) or not progress_enabled():
            return
        folder = Path(str(launcher.get("submitit_folder") or Path(str(config.hydra.sweep.dir)) / ".submitit"))
        # `<sweep dir>/.submitit/%j`: the folder holding one folder per job
        while "%" in folder.name:
            folder = folder.parent
        self._watcher = SubmititWatcher(folder, poll_s=self.poll_s).start()

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
