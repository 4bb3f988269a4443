"""The answerer extension point: the one-call reader, the Codex agent, ...

An answerer is opened once per run (it may start a model server or prepare a CLI),
told when a conversation begins (an agent prepares its workspace then), asked each
question of that conversation in file order, and closed. It writes its own audit
journals into the pack (`reader/traces.jsonl`, `agent/...`): every row of them carries
the `question_id` (or, for per-conversation work, the `sample_id`) so that a resumed
run can drop the rows of work that never finished.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from memorybench.data.records import AskedQuestion, Question, Session

if TYPE_CHECKING:  # named in a signature only: plan reads answerers without the call records (pydantic)
    from memorybench.llm.records import ModelIdentity


@dataclass(frozen=True)
class Answer:
    prediction: str
    #: sha256 of the user message a reader would send (an agent in prompt_injected mode too)
    reader_payload_sha256: str | None = None
    #: a category-5 question posed as LoCoMo's two-way choice (`reader.prompt=locomo`): the
    #: options by letter as posed, the reply as given (stripped), the option `prediction` is
    #: (None: the reply was kept) and whether the reply was other than a, b, (a) or (b)
    options: dict[str, str] | None = None
    reply: str | None = None
    choice: str | None = None
    malformed_reply: bool | None = None


@dataclass(frozen=True, slots=True)
class AskedChoice(AskedQuestion):
    """A category-5 question posed as LoCoMo's two-way choice (`reader.prompt=locomo`): the
    question and its trap, `adversarial_answer`, never its gold. Only an answerer whose
    `poses_choice` is true is asked one; every other gets the plain `AskedQuestion`."""

    #: required (a default only because AskedQuestion's last field has one): never empty
    adversarial_answer: str = ""

    def __post_init__(self) -> None:
        if not self.adversarial_answer:
            raise ValueError(f"{self.question_id}: a choice needs its adversarial_answer")


@dataclass(frozen=True)
class ConversationView:
    """What an answerer may know of a conversation: its sessions, never its questions' gold."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]


class Answerer(Protocol):
    name: ClassVar[str]

    @property
    def models(self) -> list[ModelIdentity]: ...

    @property
    def is_local(self) -> bool: ...

    def start_conversation(self, conversation: ConversationView) -> None: ...

    def answer(self, asked: AskedQuestion, memory: str) -> Answer:
        """The answer to one question. An answerer with a true `poses_choice` attribute is
        asked a category-5 question as an `AskedChoice` (with its `adversarial_answer`)."""
        ...

    def finish(self, questions: Sequence[Question]) -> None:
        """Called once every question of the run is answered (not after a failure), with the
        run's questions, gold and evidence included: for audit files computed after answering."""
