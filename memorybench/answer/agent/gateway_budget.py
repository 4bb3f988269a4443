"""One open piece of work in the gateway (a question, or a conversation's ingest pass): its
budget, the admission of each next request, and the rows of the requests it forwarded.

Budgets (null: no limit): `max_requests`; `max_input_tokens`, `max_output_tokens`,
`max_total_tokens` summed over the work's requests. A request's tokens are known only once
it is answered, so each admitted request reserves, before it is forwarded, its input (the
last answered request's input, which the next one repeats: Codex resends the history) and
its output cap; the reservation is settled (replaced by the reply's usage) when its row is
recorded. The input and total budgets refuse a request when what is used, what is reserved
by requests in flight and its own reservation would not fit; a request may overshoot by
what it alone adds. While nothing is known of the input (no request answered yet) and one
is in flight, a further request waits for it to settle instead of reserving nothing, so
concurrent requests cannot overshoot (Codex sends one at a time; the budget does not rely
on it). The output and total budgets are also passed upstream as the request's
`max_output_tokens` (what is left of them after the reservations); less left than the
API's minimum of 16 refuses the request.
"""

from __future__ import annotations

import threading
from typing import Any

BUDGET_KEYS = ("max_requests", "max_input_tokens", "max_output_tokens", "max_total_tokens")
#: the smallest max_output_tokens the OpenAI API accepts; less left than this refuses the request
MIN_OUTPUT_CAP = 16


class Work:
    """One open piece of work (a question, or a conversation's ingest pass): its budget and rows."""

    def __init__(self, question_id: str | None, sample_id: str, phase: str, budget: dict[str, Any] | None) -> None:
        self.question_id, self.sample_id, self.phase = question_id, sample_id, phase
        self.budget = {k: (int(v) if v is not None else None) for k, v in (budget or {}).items() if k in BUDGET_KEYS}
        self.rows: list[dict[str, Any]] = []
        self.refused: list[dict[str, Any]] = []
        self.started = 0  # requests forwarded (rows may still be open)
        self.input = self.output = 0
        self.last_input = 0
        self.lock = threading.Lock()
        #: forwarded requests whose row is not recorded yet (the reply's last bytes may reach the CLI first)
        self.in_flight = 0
        self.settled = threading.Condition(self.lock)
        #: index -> (input, output) reserved by a forwarded request until its row is recorded
        self.reservations: dict[int, tuple[int, int]] = {}
        self.reserved_input = self.reserved_output = 0

    def admit(self) -> tuple[int | None, str | None, int | None]:
        """(1-based index, None, output cap) for a request that may go upstream, else (None, reason, None);
        an admitted request holds its reservation until `record`."""
        b = self.budget
        tokens = b.get("max_input_tokens") is not None or b.get("max_total_tokens") is not None
        with self.lock:
            if tokens and not self.last_input and self.in_flight:
                # nothing known of the input yet: wait for the request in flight rather than reserve nothing
                self.settled.wait_for(lambda: self.in_flight == 0 or self.last_input > 0)
            used_in, used_out = self.input + self.reserved_input, self.output + self.reserved_output
            pending = f", {self.reserved_input} reserved by requests in flight" if self.reserved_input else ""
            reason = None
            if b.get("max_requests") is not None and self.started + 1 > b["max_requests"]:
                reason = f"max_requests={b['max_requests']} ({self.started} requests made)"
            elif b.get("max_input_tokens") is not None and self.started and used_in + self.last_input > b["max_input_tokens"]:
                reason = (
                    f"max_input_tokens={b['max_input_tokens']} ({self.input} input tokens used{pending}; the next request "
                    f"repeats at least the last one's {self.last_input})"
                )
            elif (
                b.get("max_total_tokens") is not None
                and self.started
                and used_in + used_out + self.last_input > b["max_total_tokens"]
            ):
                reason = (
                    f"max_total_tokens={b['max_total_tokens']} ({self.input + self.output} tokens used{pending}; the next "
                    f"request repeats at least the last one's {self.last_input} input tokens)"
                )
            cap = None
            if reason is None:
                left = [
                    b[k] - used
                    for k, used in (("max_output_tokens", used_out), ("max_total_tokens", used_in + used_out))
                    if b.get(k) is not None
                ]
                if left:
                    cap = min(left)
                    if cap < MIN_OUTPUT_CAP:
                        name = (
                            "max_output_tokens"
                            if b.get("max_output_tokens") is not None and b["max_output_tokens"] - used_out == cap
                            else "max_total_tokens"
                        )
                        reason = f"{name}={b[name]} ({cap} tokens left, under the {MIN_OUTPUT_CAP} a request needs)"
            if reason is not None:
                return None, reason, None
            self.started += 1
            self.in_flight += 1
            reserved = (self.last_input if tokens and self.started > 1 else 0, cap or 0)
            self.reservations[self.started] = reserved
            self.reserved_input += reserved[0]
            self.reserved_output += reserved[1]
            return self.started, None, cap

    def wait_settled(self, timeout_s: float) -> int:
        """Wait until every forwarded request has its row; the number still open after `timeout_s`."""
        with self.settled:
            self.settled.wait_for(lambda: self.in_flight == 0, timeout=timeout_s)
            return self.in_flight

    def record(self, row: dict[str, Any]) -> None:
        with self.lock:
            self.in_flight -= 1
            reserved_input, reserved_output = self.reservations.pop(row["index"], (0, 0))
            self.reserved_input -= reserved_input
            self.reserved_output -= reserved_output
            self.settled.notify_all()
            self.rows.append(row)
            self.input += row["input_tokens"]
            self.output += row["output_tokens"]
            if row["input_tokens"]:
                self.last_input = row["input_tokens"]
