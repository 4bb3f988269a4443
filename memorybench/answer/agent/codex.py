"""answerer=codex: the pinned Codex CLI answers each question in a prepared workspace.

Modes (`answerer.mode`):
- `workspace_files`: the workspace holds INDEX.md and sessions/session_N.md; the agent
  reads what it needs with shell commands. The task is prompts/agents/codex_workspace_v1.txt.
- `notes_only`: when a conversation starts, an ingest pass (workspace-write) lets the
  agent write memory/notes.md from the session files; the sessions are then removed and
  every question of the conversation sees the notes only.
- `prompt_injected`: the task is the reader's filled template, byte for byte the reader's
  user message (`reader_payload_sha256` matches the reader's); the workspace is empty.

`answerer.persist`: on, one workspace per conversation, the workspace-write sandbox and a
footer (prompts/agents/codex_persist_footer_v1.txt) asking the agent to read and append
memory/notes.md; the notes after each question are snapshotted into the pack. Off, the
read-only sandbox and a fresh copy of the workspace per question.

One `codex exec --json` process per question, serial, in file order, each with a fresh
CODEX_HOME, HOME and TMPDIR (nothing of an earlier question's thread is left to read) and
inside a minimal root that holds no gold (see `_isolation`).

Audit files under `agent/` in the pack:
    cli.json                 the pinned CLI (version, binary sha256), its argv and config.toml
    events.jsonl             every CLI event as printed, wrapped with question_id (agent_event.v1)
    trajectory.jsonl         normalized steps: reads, searches, writes, MCP calls, web searches (agent_step.v1)
    traces.jsonl             answer, status, usage (cached and reasoning tokens), time, task hashes, workspace findings,
                             the gateway's request count, sums and budget (agent_trace.v3)
    requests.jsonl           one row per model request the gateway forwarded: usage, latency, retries, hashes (agent_request.v2)
    notes.jsonl, notes/      the notes ledger and snapshots (persist on; notes_only ingest)
    workspaces/<sample_id>/  the files the agent was given
    recall.jsonl, comparison.json, COMPARISON.md   written after answering (`finalize_agent_pack`)
Rows of a conversation's ingest pass carry `sample_id` only; every other row its `question_id`.

Model requests: every one goes through the run's Responses gateway (`gateway`, a child process
on 127.0.0.1 that alone holds the key), which counts them per question and enforces
`answerer.budget` (a question it stops is `budget_exceeded`, with the partial answer).

After each process the harness treats the workspace as hostile (`_safe_fs`): it follows no
link the agent left, reads no FIFO, device or file hard-linked from outside, deletes
without traversing links, and records each such thing in the trace's `workspace_findings`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from memorybench import PROJECT_ROOT
from memorybench.hashing import sha256_text
from memorybench.answer.agent._cli import CodexCli, locate_cli
from memorybench.answer.agent._codex_config import ProviderSettings, render_config
from memorybench.answer.agent._events import Outcome, outcome, parse_lines, steps_from_items
from memorybench.answer.agent._finalize import finalize_agent_pack
from memorybench.answer.agent._isolation import Isolation
from memorybench.answer.agent._process import ProcessResult, run_process
from memorybench.answer.agent._records import (
    AgentEvent,
    AgentStep,
    AgentTask,
    AgentTraceV3,
    Budget,
    CliIdentity,
    GatewaySummary,
    NotesRow,
)
from memorybench.answer.agent._safe_fs import remove_tree
from memorybench.answer.agent._accounting import budget_outcome, question_budget, summarize
from memorybench.answer.agent._settings import CodexSettings, validate_codex_config
from memorybench.answer.agent.gateway import GatewayProcess
from memorybench.answer.agent._workspace import (
    audit,
    copy_workspace,
    read_notes,
    restore,
    shown_ids,
    write_notes,
    write_workspace,
)
from memorybench.answer.base import Answer, ConversationView
from memorybench.answer.prompt import SYSTEM_MESSAGE, fill_template, reader_template
from memorybench.data.records import AskedQuestion, Question
from memorybench.errors import ModelCallError, UserError
from memorybench.llm.records import ModelIdentity
from memorybench.pack import layout
from memorybench.pack.run_pack import RunPack
from memorybench.pack.schemas import SlotValue
from memorybench.registry import ANSWERERS
from memorybench.templates import PromptTemplate

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig

WORKSPACE_TEMPLATE = "agents/codex_workspace_v1.txt"
INGEST_TEMPLATE = "agents/codex_ingest_v1.txt"
PERSIST_FOOTER = "agents/codex_persist_footer_v1.txt"
#: variables passed through to the CLI when set (a proxy or CA bundle for a remote provider)
PASS_ENV = ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR")

EVENTS, TRAJECTORY, TRACES, NOTES_LEDGER = (
    "agent/events.jsonl",
    "agent/trajectory.jsonl",
    "agent/traces.jsonl",
    "agent/notes.jsonl",
)
REQUESTS = layout.AGENT_REQUESTS
#: the base URL cli.json records for the gateway (its port differs from run to run)
GATEWAY_PLACEHOLDER = "http://127.0.0.1:<gateway>/v1"
#: upstream retries the gateway makes when answerer.request_max_retries is null (the CLI's own default)
DEFAULT_RETRIES = 4


def _sha(text: str) -> str:
    return sha256_text(text)


@ANSWERERS.register("codex")
class CodexAnswerer:
    name: ClassVar[str] = "codex"

    @staticmethod
    def check(cfg: DictConfig) -> None:
        validate_codex_config(cfg)

    @staticmethod
    def open(cfg: DictConfig, pack: RunPack, *, cache_dir: Path, longest_prompt_tokens: int = 0) -> Any:
        """The run's agent (see `open_codex_answerer`); the agent sizes no local model."""
        return open_codex_answerer(cfg, pack, cache_dir=cache_dir)

    def __init__(
        self,
        settings: CodexSettings,
        cli: CodexCli,
        pack: RunPack,
        scratch: Path,
        isolation: Isolation,
        *,
        task_template: PromptTemplate,
        ingest_template: PromptTemplate | None,
        footer: PromptTemplate | None,
        secrets: Sequence[str] = (),
        gateway: GatewayProcess | None = None,
        reader_prompt: PromptTemplate | None = None,
        reader_max_tokens: int | None = None,
    ):
        self.settings = settings
        self.cli = cli
        self.pack = pack
        self.scratch = scratch
        self.isolation = isolation
        self.task_template = task_template
        self.ingest_template = ingest_template
        self.footer = footer
        self.secrets = [s for s in secrets if s]
        self.config_toml = (scratch / "config.toml").read_text("utf-8")
        #: every model request goes through it; None only in tests of the CLI without accounting
        self.gateway = gateway
        self.reader_prompt = reader_prompt
        self.reader_max_tokens = reader_max_tokens
        self.requests = pack.journal(REQUESTS)
        self.events = pack.journal(EVENTS)
        self.trajectory = pack.journal(TRAJECTORY)
        self.traces = pack.journal(TRACES)
        self.notes_ledger = pack.journal(NOTES_LEDGER)
        self._conversation: ConversationView | None = None
        self._valid: dict[str, str] = {}
        self._template_dir: Path | None = None
        self._files: dict[str, str] = {}
        #: whether the question workspaces hold memory/notes.md
        self._notes = settings.persist or settings.mode == "notes_only"

    # -- identity --------------------------------------------------------------------
    @property
    def models(self) -> list[ModelIdentity]:
        s = self.settings
        return [
            ModelIdentity(role="agent", provider=s.provider, requested=s.model, base_url=s.base_url, local=False),
            ModelIdentity(
                role="agent_cli",
                provider="npm",
                requested=self.cli.spec,
                answered=[self.cli.reported],
                weights={"package": self.cli.spec, "binary_sha256": self.cli.binary_sha256},
            ),
        ]

    @property
    def is_local(self) -> bool:
        return False

    # -- conversations ---------------------------------------------------------------
    def start_conversation(self, conversation: ConversationView) -> None:
        s = self.settings
        sid = conversation.sample_id
        self._conversation = conversation
        self._valid = shown_ids(conversation)
        folder = self.scratch / "conversations" / sid
        remove_tree(folder, within=self.scratch)
        notes: str | None = "" if s.persist else None
        if s.mode == "workspace_files":
            self._files = write_workspace(folder, conversation, sessions=True, notes=notes)
            self._snapshot_files(f"agent/workspaces/{sid}", self._files)
        elif s.mode == "notes_only":
            ingested = self._ingest(conversation)
            self._files = write_workspace(folder, conversation, sessions=False, notes=ingested)
            self._snapshot_files(f"agent/workspaces/{sid}/questions", self._files)
        else:  # prompt_injected: the memory comes with the task
            folder.mkdir(parents=True)
            self._files = {}
            if notes is not None:
                write_notes(folder, notes)
        if s.persist:
            write_notes(folder, self._latest_notes(sid, default=read_notes(folder).text))
        self._template_dir = folder

    def _snapshot_files(self, prefix: str, files: dict[str, str]) -> None:
        for relpath, text in files.items():
            self.pack.write_text(f"{prefix}/{relpath}", text)

    def _latest_notes(self, sample_id: str, default: str) -> str:
        """The notes as the last finished work of this conversation left them (resume)."""
        latest = None
        for row in self.notes_ledger.rows():
            if row.get("sample_id") == sample_id:
                latest = row
        if latest is None:
            return default
        return self.pack.path(latest["path"]).read_text("utf-8")

    def _ingest(self, conversation: ConversationView) -> str:
        """notes_only: the agent writes memory/notes.md from the sessions (once per conversation)."""
        sid = conversation.sample_id
        for row in self.notes_ledger.rows():
            if row.get("sample_id") == sid and row.get("phase") == "ingest" and "question_id" not in row:
                return self.pack.path(row["path"]).read_text("utf-8")

        # an ingest pass cut off by a crash: drop its rows, redo it whole
        def keep(row: dict[str, Any]) -> bool:
            return not (row.get("sample_id") == sid and row.get("phase") == "ingest" and "question_id" not in row)

        for journal in (self.events, self.trajectory, self.traces, self.requests):
            journal.close()
            journal.retain(keep)
        folder = self.scratch / "ingest" / sid
        remove_tree(folder, within=self.scratch)
        files = write_workspace(folder, conversation, sessions=True, notes="")
        self._snapshot_files(f"agent/workspaces/{sid}/ingest", files)
        assert self.ingest_template is not None
        task = self.ingest_template.text
        record = AgentTask(template=self.ingest_template.relpath, template_sha256=self.ingest_template.sha256, slots={})
        result, out, steps, gateway = self._run(
            folder, task, "workspace-write", self.settings.ingest_timeout_s, question_id=None, sample_id=sid, phase="ingest"
        )
        # read without following anything: notes.md made a link to the dataset must not become the notes
        findings = audit(folder, files, notes=True)
        read = read_notes(folder)
        notes = read.text
        self._write_trace(
            None,
            sid,
            "ingest",
            "workspace-write",
            result,
            out,
            steps,
            task=task,
            record=record,
            payload_sha=None,
            notes_before=None,
            notes_after=_sha(notes),
            restored=[],
            findings=[*findings, *read.findings],
            gateway=gateway,
        )
        if out.status != "completed":
            raise ModelCallError(
                f"codex ingest of {sid} ended with status {out.status} ({out.error}); "
                "check the provider (or raise answerer.ingest_timeout_s), then rerun to resume"
            )
        relpath = f"agent/notes/{sid}.ingest.md"
        self.pack.write_text(relpath, notes)
        self.notes_ledger.append(
            NotesRow(
                sample_id=sid,
                phase="ingest",
                notes_sha256=_sha(notes),
                bytes=len(notes.encode("utf-8")),
                path=relpath,
                changed=bool(notes),
            ).row()
        )
        remove_tree(folder, within=self.scratch)
        return notes

    # -- questions -------------------------------------------------------------------
    def finish(self, questions: Sequence[Question]) -> None:
        """After every question is answered: recall against the evidence and comparability,
        computed from the stored files (the evidence is joined here, never shown to the agent)."""
        finalize_agent_pack(self.pack.root, questions)

    def answer(self, asked: AskedQuestion, memory: str) -> Answer:
        s = self.settings
        assert self._template_dir is not None and self._conversation is not None, "start_conversation first"
        findings: list[str] = []
        if s.persist:
            workspace = self._template_dir
        else:
            workspace = self.scratch / "questions" / asked.question_id
            remove_tree(workspace, within=self.scratch)
            findings += copy_workspace(self._template_dir, workspace)
        task, record, payload_sha = self._task(asked, memory)
        notes_before = None
        if s.persist:
            before = read_notes(workspace)
            notes_before, findings = _sha(before.text), [*findings, *before.findings]
        budget = question_budget(s.budget, s.match_reader, asked.question, memory, self.reader_prompt, self.reader_max_tokens)
        result, out, steps, gateway = self._run(
            workspace,
            task,
            s.sandbox,
            s.timeout_s,
            question_id=asked.question_id,
            sample_id=asked.sample_id,
            phase="answer",
            budget=budget,
        )
        findings += audit(workspace, self._files, notes=self._notes)
        restored: list[str] = []
        notes_after = None
        if s.persist:
            after = read_notes(workspace)
            notes, findings = after.text, [*findings, *after.findings]
            notes_after = _sha(notes)
            restored = restore(workspace, self._files)
            # the workspace's notes become what the harness took (nothing the agent linked in,
            # no more than the size bound): what the next question sees is the snapshot
            write_notes(workspace, notes)
            relpath = f"agent/notes/{asked.question_id}.md"
            self.pack.write_text(relpath, notes)
            self.notes_ledger.append(
                NotesRow(
                    question_id=asked.question_id,
                    sample_id=asked.sample_id,
                    phase="answer",
                    notes_sha256=notes_after,
                    bytes=len(notes.encode("utf-8")),
                    path=relpath,
                    changed=notes_after != notes_before,
                ).row()
            )
        else:
            remove_tree(workspace, within=self.scratch)
        self._write_trace(
            asked.question_id,
            asked.sample_id,
            "answer",
            s.sandbox,
            result,
            out,
            steps,
            task=task,
            record=record,
            payload_sha=payload_sha,
            notes_before=notes_before,
            notes_after=notes_after,
            restored=restored,
            findings=list(dict.fromkeys(findings)),
            gateway=gateway,
        )
        if out.status == "failed" and s.on_failure == "abort":
            raise ModelCallError(
                f"codex failed on {asked.question_id}: {out.error}; fix the cause and rerun the same "
                "command to resume (or set answerer.on_failure=record to keep failures as empty answers)"
            )
        return Answer(out.answer, payload_sha)

    def _task(self, asked: AskedQuestion, memory: str) -> tuple[str, AgentTask, str | None]:
        template = self.task_template
        if self.settings.mode == "prompt_injected":
            text = fill_template(template.text, memory, asked.question)
            payload_sha: str | None = _sha(text)
            slots = {"memory": SlotValue(ref=_sha(memory)), "question": SlotValue(text=asked.question)}
        else:
            text = template.text.replace("{question}", asked.question)
            payload_sha = None
            slots = {"question": SlotValue(text=asked.question)}
        record = AgentTask(template=template.relpath, template_sha256=template.sha256, slots=slots)
        if self.footer is not None:
            text += self.footer.text
            record = record.model_copy(update={"footer": self.footer.relpath, "footer_sha256": self.footer.sha256})
        return text, record, payload_sha

    # -- one process -----------------------------------------------------------------
    def argv(self, workspace: Path, sandbox: str) -> list[str]:
        return [
            str(self.cli.binary),
            "exec",
            "--json",
            "--ephemeral",
            "--skip-git-repo-check",
            "--strict-config",
            "-s",
            sandbox,
            "-C",
            str(workspace),
            "-",
        ]

    def env(self, proc_dir: Path) -> dict[str, str]:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(proc_dir / "home"),
            "CODEX_HOME": str(proc_dir / "codex_home"),
            "TMPDIR": str(proc_dir / "tmp"),
            "LANG": "C.UTF-8",
            "CODEX_MANAGED_BY_NPM": "1",
        }
        if self.gateway is None:  # the CLI talks to the provider itself
            for name in PASS_ENV:
                if os.environ.get(name):
                    env[name] = os.environ[name]
            key_env = self.settings.api_key_env
            if key_env and os.environ.get(key_env):
                env[key_env] = os.environ[key_env]
        # with the gateway the CLI gets no key and no proxy: it talks to 127.0.0.1 only
        env.update(self.isolation.agent_env())  # what reaching the bridged endpoint needs (NO_PROXY, HTTPS_PROXY)
        return env

    def _redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "[REDACTED]")
        return text

    def _run(
        self,
        workspace: Path,
        task: str,
        sandbox: str,
        timeout_s: float,
        *,
        question_id: str | None,
        sample_id: str,
        phase: str,
        budget: Budget | None = None,
    ) -> tuple[ProcessResult, Outcome, list[dict[str, Any]], GatewaySummary | None]:
        # a fresh CODEX_HOME, HOME and TMPDIR per process: nothing of an earlier question's thread is left to read
        proc_dir = self.scratch / "processes" / (question_id or f"{sample_id}.{phase}")
        remove_tree(proc_dir, within=self.scratch)
        for sub in ("codex_home", "home", "tmp"):
            (proc_dir / sub).mkdir(parents=True)
        (proc_dir / "codex_home" / "config.toml").write_text(self.config_toml, "utf-8")
        visible = [proc_dir / "codex_home", proc_dir / "home", proc_dir / "tmp"]
        writable = sandbox != "read-only"  # the read-only sandbox's workspace is read-only in the outer root too
        argv = self.isolation.wrap(
            self.argv(workspace, sandbox),
            cwd=workspace,
            visible=[*visible, workspace] if writable else visible,
            readonly=[] if writable else [workspace],
        )
        if self.gateway is not None:
            self.gateway.begin(question_id, sample_id, phase, budget.limits() if budget is not None else None)
        try:
            result = run_process(argv, stdin_text=task, env=self.env(proc_dir), cwd=str(workspace), timeout_s=timeout_s)
        finally:
            report = self.gateway.end() if self.gateway is not None else None
            # HOME and TMPDIR were the agent's to write: removed without following its links
            with contextlib.suppress(OSError):
                remove_tree(proc_dir, within=self.scratch)
        lines = [self._redact(line) for line in result.lines]
        result.stderr_tail = self._redact(result.stderr_tail)
        events = parse_lines(lines)
        out = outcome(events, exit_code=result.exit_code, timed_out=result.timed_out, stderr_tail=result.stderr_tail)
        for seq, event in enumerate(events):
            self.events.append(AgentEvent(question_id=question_id, sample_id=sample_id, phase=phase, seq=seq, event=event).row())
        steps = steps_from_items(out.items, workspace, self._valid)
        for number, step in enumerate(steps, start=1):
            self.trajectory.append(
                AgentStep(question_id=question_id, sample_id=sample_id, phase=phase, step=number, **step).row()
            )
        summary = None
        if report is not None:
            summary = summarize(report, out, budget, self.requests, run_id=self.pack.root.name)
            if summary.budget_exceeded is not None and not result.timed_out:
                # the gateway refused a request: the CLI ended its turn on the budget error; the answer is
                # whatever the agent had said by then (scored as given, counted apart)
                out = budget_outcome(out, summary.budget_exceeded)
        return result, out, steps, summary

    def _write_trace(
        self,
        question_id: str | None,
        sample_id: str,
        phase: str,
        sandbox: str,
        result: ProcessResult,
        out: Outcome,
        steps: list[dict[str, Any]],
        *,
        task: str,
        record: AgentTask,
        payload_sha: str | None,
        notes_before: str | None,
        notes_after: str | None,
        restored: list[str],
        findings: list[str],
        gateway: GatewaySummary | None = None,
    ) -> None:
        s = self.settings
        trace = AgentTraceV3(
            question_id=question_id,
            sample_id=sample_id,
            phase=phase,
            mode=s.mode,
            persist=s.persist,
            sandbox=sandbox,
            model=s.model,
            provider=s.provider,
            base_url=s.base_url,
            codex_version=self.cli.version,
            status=out.status,
            answer=out.answer,
            exit_code=result.exit_code,
            error=out.error,
            warnings=out.warnings,
            usage=out.usage,
            turns=out.turns,
            wall_s=result.wall_s,
            timeout_s=s.ingest_timeout_s if phase == "ingest" else s.timeout_s,
            started_at=result.started_at,
            ended_at=result.ended_at,
            thread_id=out.thread_id,
            agent_task_sha256=_sha(task),
            reader_payload_sha256=payload_sha,
            task=record,
            events=len(result.lines),
            steps=len(steps),
            notes_before_sha256=notes_before,
            notes_after_sha256=notes_after,
            workspace_restored=restored,
            stderr_tail=result.stderr_tail or None,
            workspace_findings=findings,
            gateway=gateway,
        )
        self.traces.append(trace.row())


# -- opening -------------------------------------------------------------------------
def _secret_paths(cfg: DictConfig, pack: RunPack, cache_dir: Path) -> tuple[dict[str, Path], list[Path]]:
    """Gold-bearing places (must stay outside what the agent sees) and files to probe for."""
    from memorybench.benchmark import dataset_named
    from memorybench.data.pins import pins_dir

    pins = pins_dir(cfg.paths.get("pins"))
    secrets: dict[str, Path] = {
        "pins folder": pins,
        "pack": pack.root,
        "cache folder": cache_dir,
        "project checkout": PROJECT_ROOT,
    }
    packs_root = str(cfg.storage.get("root") or cfg.paths.packs)
    if "://" not in packs_root:
        secrets["packs folder"] = Path(packs_root).expanduser().resolve()
    # the run's pinned data file, where the agent would find it in the pins folder
    dataset = dataset_named(str(cfg.dataset.name))
    pinned = [pins / dataset.pinned().relpath] if dataset.pin is not None and not dataset.folder else []
    sentinels = [*pinned, PROJECT_ROOT / "package.json", pack.root / "config.resolved.yaml"]
    if cfg.dataset.get("path"):
        data = Path(str(cfg.dataset.path)).expanduser().resolve()
        secrets["dataset file"] = data
        sentinels.insert(0, data)
    return secrets, [p for p in sentinels if p.exists()]


@contextlib.contextmanager
def open_codex_answerer(cfg: DictConfig, pack: RunPack, *, cache_dir: Path) -> Iterator[CodexAnswerer]:
    """A ready CodexAnswerer: CLI checked, fresh CODEX_HOME, isolation proven; finalizes `agent/` on exit."""
    validate_codex_config(cfg)
    s = CodexSettings.from_config(cfg.answerer)
    cli = locate_cli()
    key_env = s.api_key_env
    if s.provider == "openai" and key_env and not os.environ.get(key_env):
        raise UserError(f"{key_env} is not set; export {key_env}=... for answerer=codex with provider openai")
    if key_env and not os.environ.get(key_env):
        key_env = None  # an OpenAI-compatible server without a key: no Authorization header
    # the run's own folder (never the configured folder itself, which may hold other things)
    scratch = (Path(s.scratch_dir).expanduser() if s.scratch_dir else cache_dir / "agent").resolve() / pack.root.name
    remove_tree(scratch, within=scratch.parent)  # a fresh CODEX_HOME per run; workspaces are rebuilt from the pack
    for sub in ("conversations", "processes", "probe"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)

    # prompts (copied into the pack) and the task template of the mode
    if s.mode == "prompt_injected":
        task_template = reader_template(str(cfg.reader.prompt))
        pack.write_text("prompts/system.txt", SYSTEM_MESSAGE)
    else:
        task_template = PromptTemplate.load(WORKSPACE_TEMPLATE, slots=frozenset({"question"}))
    ingest = PromptTemplate.load(INGEST_TEMPLATE, slots=frozenset()) if s.mode == "notes_only" else None
    footer = PromptTemplate.load(PERSIST_FOOTER, slots=frozenset()) if s.persist else None
    for template in (task_template, ingest, footer):
        if template is not None:
            pack.write_text(f"prompts/{template.relpath}", template.text)

    # the reader's template and max_tokens, for a budget matched to the reader's (answerer.budget.match_reader)
    reader_prompt = reader_template(str(cfg.reader.prompt)) if s.match_reader else None
    reader_max_tokens = int(cfg.reader.max_tokens) if s.match_reader else None

    # every model request goes through the run's gateway, which alone holds the key; the CLI does not
    # retry (the gateway retries the upstream and counts it) and is given no key
    gateway = GatewayProcess(
        s.base_url,
        key_env,
        raw=s.audit_raw,
        max_retries=DEFAULT_RETRIES if s.request_max_retries is None else int(s.request_max_retries),
        timeout_s=s.timeout_s,
        log_path=scratch / "gateway.log",
    )

    def config_for(base_url: str) -> str:
        return render_config(
            model=s.model,
            provider=ProviderSettings(base_url, None, 0, s.stream_max_retries),
            reasoning_effort=s.reasoning_effort,
            developer_instructions=SYSTEM_MESSAGE if s.mode == "prompt_injected" else None,
        )

    config_toml = config_for(GATEWAY_PLACEHOLDER)

    with gateway:  # the CLI reaches the model through the gateway only: the isolation bridges its port
        isolation = Isolation.create(scratch / "root", [cli.vendor_dir], endpoint=gateway.base_url, network=s.network)
        try:  # the bridge to the gateway lives as long as the answerer
            secrets, sentinels = _secret_paths(cfg, pack, cache_dir)
            isolation.check_secrets(secrets, [scratch])
            isolation.probe(sentinels, cwd=scratch / "probe", visible=[scratch / "probe"], binary=cli.binary)
            (scratch / "config.toml").write_text(config_for(gateway.base_url), "utf-8")  # copied into each CODEX_HOME
            answerer = CodexAnswerer(
                s,
                cli,
                pack,
                scratch,
                isolation,
                task_template=task_template,
                ingest_template=ingest,
                footer=footer,
                secrets=[os.environ.get(s.api_key_env, "")] if s.api_key_env else [],
                gateway=gateway,
                reader_prompt=reader_prompt,
                reader_max_tokens=reader_max_tokens,
            )
            _write_identity(pack, cli, answerer, s, config_toml, isolation.describe())
            yield answerer
        finally:
            isolation.close()


def _write_identity(
    pack: RunPack, cli: CodexCli, answerer: CodexAnswerer, s: CodexSettings, config_toml: str, isolation: str
) -> None:
    identity = CliIdentity(
        package="@openai/codex",
        version=cli.version,
        reported=cli.reported,
        binary_sha256=cli.binary_sha256,
        argv=answerer.argv(Path("<workspace>"), s.sandbox),
        config_toml=config_toml,
        config_toml_sha256=sha256_text(config_toml),
        isolation=isolation,
        gateway=f"memorybench Responses gateway on 127.0.0.1 ({GATEWAY_PLACEHOLDER} above), forwarding to "
        f"{s.base_url} with the key it alone holds; every request counted in {REQUESTS}",
    )
    pack.write_json("agent/cli.json", identity)
