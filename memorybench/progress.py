"""One progress reporter for every long loop: qa, the memory build, autorater, import, waves.

On a terminal (stderr a TTY) it is a tqdm bar. Anywhere else (nohup, CI, a Cloud Run log)
it prints a plain line at once, then one every `MEMORYBENCH_PROGRESS_EVERY_S` seconds
(default 30; 0: one per update), and a last one when the loop ends:

    qa conv-30 412/1986 questions, 2.1 q/s, eta 12m, $0.31 so far

The rate counts only the work done since this process started (a resumed run's earlier
answers are in the count, not in the rate). The cost is what this process's model calls
have cost since the reporter started (`SPEND`, fed by the chat client), shown only when
every such call had a known price; a loop that made no priced call shows none.

Before and between a loop's lines, `say` prints the phases that would otherwise look hung
(loading the embedded model, prefilling a memory, resuming a pack); `CALLS` keeps each
model's last call and prefill speed for them (fed by the chat client).

A reporter prints to stderr and nowhere else: what goes into a pack never depends on it.
`MEMORYBENCH_PROGRESS=off` silences every reporter (the test suite sets it: tests/conftest.py).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any, TypeVar

from memorybench.errors import UserError

__all__ = [
    "CALLS",
    "EVERY_ENV",
    "PROGRESS_ENV",
    "SPEND",
    "Calls",
    "LastCall",
    "Progress",
    "Spend",
    "format_eta",
    "format_line",
    "progress_enabled",
    "progress_every_s",
    "record_call",
    "record_spend",
    "say",
]

#: off (0, off, false, no): no progress at all, bar or line (a script that reads stderr; the test suite)
PROGRESS_ENV = "MEMORYBENCH_PROGRESS"
#: seconds between two plain lines when stderr is not a terminal (0: a line per update)
EVERY_ENV = "MEMORYBENCH_PROGRESS_EVERY_S"
DEFAULT_EVERY_S = 30.0
T = TypeVar("T")


class Spend:
    """The running cost of this process's model calls (thread-safe): calls, dollars, unpriced calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.usd = 0.0
        self.unpriced = 0

    def record(self, cost_usd: float | None) -> None:
        with self._lock:
            self.calls += 1
            if cost_usd is None:
                self.unpriced += 1
            else:
                self.usd += float(cost_usd)

    def snapshot(self) -> tuple[int, float, int]:
        with self._lock:
            return self.calls, self.usd, self.unpriced


#: the process's meter (memorybench.llm.client records every completed call in it)
SPEND = Spend()


def record_spend(cost_usd: float | None) -> None:
    SPEND.record(cost_usd)


@dataclass(frozen=True)
class LastCall:
    prompt_tokens: int
    #: prompt tokens restored from a prefill kept on disk (memorybench.llm.local.prefill_store)
    restored_tokens: int
    latency_s: float


class Calls:
    """Per model (the name it answers with): its last completed call, and its prefill speed in
    prompt tokens per second, measured on the last call that evaluated at least
    `MIN_RATE_TOKENS` prompt tokens (generation included: the speed errs low). Thread-safe."""

    MIN_RATE_TOKENS = 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[str, LastCall] = {}
        self._rate: dict[str, float] = {}

    def record(self, model: str, prompt_tokens: int, restored_tokens: int | None, latency_s: float) -> None:
        call = LastCall(int(prompt_tokens), int(restored_tokens or 0), float(latency_s))
        with self._lock:
            self._last[model] = call
            evaluated = call.prompt_tokens - call.restored_tokens
            if evaluated >= self.MIN_RATE_TOKENS and call.latency_s > 0:
                self._rate[model] = evaluated / call.latency_s

    def forget_last(self, model: str) -> None:
        with self._lock:
            self._last.pop(model, None)

    def last(self, model: str) -> LastCall | None:
        with self._lock:
            return self._last.get(model)

    def prefill_rate(self, model: str) -> float | None:
        with self._lock:
            return self._rate.get(model)


#: the process's calls (memorybench.llm.client records every call it made, not a cache hit)
CALLS = Calls()


def record_call(model: str, prompt_tokens: int, restored_tokens: int | None, latency_s: float) -> None:
    CALLS.record(model, prompt_tokens, restored_tokens, latency_s)


def say(text: str, *, enabled: bool = True, stream: IO[str] | None = None) -> None:
    """One phase line on stderr, at once (nothing when `enabled` is false or progress is off)."""
    if not (enabled and progress_enabled()):
        return
    try:
        print(text, file=stream if stream is not None else sys.stderr, flush=True)
    except (OSError, ValueError):  # a closed or broken stderr never stops the work
        pass


def progress_enabled(environ: dict[str, str] | None = None) -> bool:
    """`MEMORYBENCH_PROGRESS`: on unless 0, off, false or no."""
    value = (os.environ if environ is None else environ).get(PROGRESS_ENV, "").strip().lower()
    if value in ("", "1", "on", "true", "yes"):
        return True
    if value in ("0", "off", "false", "no"):
        return False
    raise UserError(f"{PROGRESS_ENV}={value!r} is neither on nor off; set it to on or off")


def progress_every_s(environ: dict[str, str] | None = None) -> float:
    """`MEMORYBENCH_PROGRESS_EVERY_S` as seconds (default 30)."""
    value = (os.environ if environ is None else environ).get(EVERY_ENV, "").strip()
    if not value:
        return DEFAULT_EVERY_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise UserError(f"{EVERY_ENV}={value!r} is not a number of seconds; set it to e.g. 30 (0: a line per update)")
    return seconds


def format_eta(seconds: float) -> str:
    """45s, 12m, 1h05m."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{round(seconds / 60)}m"
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m"


def _format_rate(rate: float) -> str:
    return f"{rate:.0f}" if rate >= 10 else f"{rate:.1f}" if rate >= 1 else f"{rate:.2f}"


def format_line(
    stage: str,
    label: str | None,
    done: int,
    total: int | None,
    unit: str,
    rate_unit: str,
    rate: float | None,
    cost_usd: float | None,
) -> str:
    """`qa conv-30 412/1986 questions, 2.1 q/s, eta 12m, $0.31 so far` (rate, eta and cost when known)."""
    head = " ".join(p for p in (stage, label) if p)
    parts = [f"{head} {done}/{total} {unit}" if total is not None else f"{head} {done} {unit}"]
    if rate is not None and rate > 0:
        parts.append(f"{_format_rate(rate)} {rate_unit}/s")
        if total is not None and done < total:
            parts.append(f"eta {format_eta((total - done) / rate)}")
    if cost_usd is not None:
        parts.append(f"${cost_usd:.2f} so far" if cost_usd >= 0.01 or cost_usd == 0 else f"${cost_usd:.4f} so far")
    return ", ".join(parts)


class Progress:
    """A loop's progress: `update()` per unit done, `set_label()` for what it works on now.

    `enabled=False` prints nothing (a caller's --quiet). `stream` (default stderr) decides:
    a TTY gets a tqdm bar, anything else plain lines (`tty` forces either); `say` takes the
    plain lines instead (a driver's own prefixed printer). A context manager; `close()`
    prints the last line.
    """

    def __init__(
        self,
        stage: str,
        total: int | None,
        *,
        unit: str = "questions",
        rate_unit: str = "q",
        initial: int = 0,
        label: str | None = None,
        enabled: bool = True,
        stream: IO[str] | None = None,
        every_s: float | None = None,
        tty: bool | None = None,
        spend: Spend | None = SPEND,
        say: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stage, self.total, self.unit, self.rate_unit = stage, total, unit, rate_unit
        self.initial = self.done = initial
        self.label = label
        #: what the label's work has done so far, asked at each line (a memory's writer calls while it builds)
        self.detail: Callable[[], str | None] | None = None
        self.enabled = enabled and progress_enabled()
        self.stream = stream if stream is not None else sys.stderr
        self.every_s = progress_every_s() if every_s is None else every_s
        self._print = say
        self._spend, self._spent0 = spend, (spend.snapshot() if spend is not None else (0, 0.0, 0))
        self._clock = clock
        self._started = clock()
        self._lock = threading.RLock()
        self._last_said: tuple[int, str | None] | None = None
        self._bar: Any = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._closed = False
        if not self.enabled:
            return
        is_tty = say is None and (tty if tty is not None else bool(getattr(self.stream, "isatty", lambda: False)()))
        if is_tty:
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=initial, desc=self._head(), unit=rate_unit, file=self.stream)
            self._ticker = threading.Thread(target=self._refresh, name=f"progress-{stage}", daemon=True)
            self._ticker.start()
            return
        self._say()  # the first line at once
        if self.every_s > 0:
            self._ticker = threading.Thread(target=self._tick, name=f"progress-{stage}", daemon=True)
            self._ticker.start()

    # -- what the loop tells it ---------------------------------------------------------------
    def update(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            if self._bar is not None:
                self._bar.update(n)
                cost = self.cost_usd()
                if cost is not None:
                    self._bar.set_postfix_str(f"${cost:.2f}", refresh=False)
            elif self.enabled and self.every_s == 0:
                self._say()

    def iterate(self, items: Iterable[T]) -> Iterator[T]:
        """Each item, counted once the loop's body for it has run; the reporter closes with the loop."""
        try:
            for item in items:
                yield item
                self.update()
        finally:
            self.close()

    def note(self, text: str) -> None:
        """A phase line between the loop's lines (above a terminal's bar); nothing when disabled."""
        if not self.enabled:
            return
        with self._lock:
            try:
                if self._bar is not None:
                    self._bar.write(text, file=self.stream)
                elif self._print is not None:
                    self._print(text)
                else:
                    print(text, file=self.stream, flush=True)
            except (OSError, ValueError):
                pass

    def set_label(self, label: str | None, detail: Callable[[], str | None] | None = None) -> None:
        """What the loop works on now; `detail`, when given, is asked at each line for how far
        that work has got (a build that makes thousands of writer calls before the next
        question: `conv-26 (building memory: 212 writer calls, 3 failed, 2.9 s a call)`)."""
        with self._lock:
            self.label, self.detail = label, detail
            if self._bar is not None:
                self._bar.set_description_str(self._head())

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            self._say(only_if_changed=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what it says ---------------------------------------------------------------------------
    def rate(self) -> float | None:
        """Units per second since this reporter started (a resume's earlier units left out)."""
        elapsed = self._clock() - self._started
        now = self.done - self.initial
        return now / elapsed if now > 0 and elapsed > 0 else None

    def cost_usd(self) -> float | None:
        """Dollars of this process's model calls since the reporter started; None unless all were priced."""
        if self._spend is None:
            return None
        calls, usd, unpriced = self._spend.snapshot()
        calls0, usd0, unpriced0 = self._spent0
        if calls == calls0 or unpriced != unpriced0:
            return None
        return max(0.0, usd - usd0)

    def line(self) -> str:
        with self._lock:
            return format_line(
                self.stage, self._label(), self.done, self.total, self.unit, self.rate_unit, self.rate(), self.cost_usd()
            )

    def _label(self) -> str | None:
        detail = self.detail() if self.detail is not None else None
        if not detail:
            return self.label
        return (
            f"{self.label[:-1]}: {detail})"
            if self.label and self.label.endswith(")")
            else f"{self.label or ''} ({detail})".strip()
        )

    def _head(self) -> str:
        return " ".join(p for p in (self.stage, self._label()) if p)

    def _say(self, only_if_changed: bool = False) -> None:
        with self._lock:
            text = self.line()
            said = (self.done, self._label())
            if only_if_changed and said == self._last_said:
                return  # the count and the label said already (the rate alone moved)
            self._last_said = said
            try:
                if self._print is not None:
                    self._print(text)
                else:
                    print(text, file=self.stream, flush=True)
            except (OSError, ValueError):  # a closed or broken stderr never stops the work
                pass

    def _tick(self) -> None:
        while not self._stop.wait(self.every_s):
            self._say()

    def _refresh(self) -> None:
        """A terminal's bar: its description follows the label's detail (once a second)."""
        while not self._stop.wait(1.0):
            with self._lock:
                if self.detail is not None and self._bar is not None:
                    self._bar.set_description_str(self._head())
