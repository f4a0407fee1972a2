"""case_followup: the long-lived chat agent. "An operator can reply by DM on a case thread for
days, and every reply re-invokes case_followup with the entire conversation so far."

One run answers the thread's replies past the case's watermark (``memory.json``): the whole
conversation so far goes to the model (the ticket, TASK.md, ANALYSIS.md, the transcripts since
the last consolidation, the new replies — ``prompt.build`` keeps it inside its budget), the
answer goes to the case thread through the allowlist, and the turn is written to
``followup_transcript_NNN.md``. An approval ("go", "approve") from the operator in the case
thread is no conversation: it hands the case to the dev-agent through ``admin: task``'s own code.

After the turns: every N replies the gap analyzer runs as a sub-agent; then consolidate_trigger
is checked and, when a signal fires, ``consolidate`` is dispatched.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness_cli import clock
from harness_cli.config import Config, load_config
from harness_cli.dispatch import dispatcher as dispatch
from harness_cli.dispatch.backends import choose_backend
from harness_cli.dispatch.payload import Payload, Trigger
from harness_cli.dispatch.run import Outcome, Run
from harness_cli.errors import HarnessError, InputError, ServiceError
from harness_cli.intake import pause
from harness_cli.intake.admin import execute
from harness_cli.intake.admin_parser import AdminCommand
from harness_cli.intake.context import Intake
from harness_cli.investigation.publish import read_ticket
from harness_cli.logs import event
from harness_cli.loop.prompts import render
from harness_cli.memory import prompt as followup_prompt
from harness_cli.memory import state as memstate
from harness_cli.memory import transcripts
from harness_cli.memory.gap_analyzer import analyze
from harness_cli.memory.notify import case_thread, post_to_case
from harness_cli.memory.replies import Reply, Thread, is_approval, new_replies, read_until_visible
from harness_cli.memory.runner import MemoryRunner, build
from harness_cli.memory.thresholds import MemoryThresholds, thresholds_from
from harness_cli.memory.trigger import evaluate
from harness_cli.outbox.doors import Doors
from harness_cli.outbox.outbound import Outbound
from harness_cli.outbox.slack_door import Owed
from harness_cli.workspace import registry
from harness_cli.workspace.case import Case

log = logging.getLogger("harness.memory")


@dataclass
class Turn:
    transcript: str
    replies: list[str]
    approval: bool = False
    posted_ts: str | None = None
    prompt_chars: int = 0
    left_out: list[str] = field(default_factory=list)


@dataclass
class FollowupRun:
    case_id: str
    thread: str
    turns: list[Turn] = field(default_factory=list)
    gap_reports: list[str] = field(default_factory=list)
    consolidation: list[str] = field(default_factory=list)
    """The consolidate_trigger signals that fired (a consolidate run was dispatched)."""
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def followup_workflow(run: Run) -> Outcome:
    """The followup workflow's entry: answer the replies past the case's watermark (the
    payload's thread, else the case thread in the operator's self-DM)."""
    cfg = load_config()
    thread, kind, ts = None, "manual", None
    if run.payload is not None:
        kind, ts = run.payload.trigger.kind, run.payload.trigger.ts or None
        if run.payload.channel and run.payload.thread_ts:
            dm = cfg.harness.operator.self_dm_channel
            thread = Thread(run.payload.channel, run.payload.thread_ts, run.payload.channel == dm)
    admin = Intake.through(cfg, run.doors)
    out = run.doors.out if run.post else None
    done = Followup(cfg, run.doors, out, admin).run(
        run.case_id, thread=thread, trigger_kind=kind, trigger_ts=ts
    )
    outcome = Outcome("followup", data=done.to_json())
    if done.note:
        outcome.skipped.append(f"{run.case_id}: {done.note}")
    for turn in done.turns:
        what = "approved: handed to the dev-agent" if turn.approval else "answered"
        outcome.changed.append(f"{turn.transcript}: {len(turn.replies)} reply(ies) {what}")
    outcome.changed += [f"{name}: gap report written" for name in done.gap_reports]
    if done.consolidation:
        outcome.messages.append(f"consolidation triggered ({', '.join(done.consolidation)})")
    return outcome


@dataclass
class Followup:
    """One followup run's collaborators, passed in (:func:`followup_workflow` builds them)."""

    cfg: Config
    doors: Doors
    out: Outbound | None
    """None: a dry run (``--no-post``), nothing posted."""
    admin: Intake
    """What an approval reply runs ``admin: task`` with."""
    runner: MemoryRunner | None = None
    """Built on the first model call: an approval or an already-answered reply needs none."""

    @property
    def limits(self) -> MemoryThresholds:
        return thresholds_from(self.cfg.harness)

    def run(
        self,
        case_id: str,
        *,
        thread: Thread | None = None,
        trigger_kind: str = "manual",
        trigger_ts: str | None = None,
    ) -> FollowupRun:
        case = registry.load_case(case_id)
        folder = registry.case_dir(case_id)
        thread = thread or self._case_thread(case)
        done = FollowupRun(case_id, thread.key)
        operator = self.cfg.harness.operator.slack_user_id
        for round_no in range(self.limits.followup_max_rounds):
            after = memstate.load(folder).answered.get(thread.key)
            replies = read_until_visible(
                functools.partial(
                    new_replies,
                    self.doors.slack,
                    thread,
                    operator,
                    after=after,
                    limit=self.cfg.harness.inputs.reply_chars,
                ),
                trigger_ts if round_no == 0 else None,
                attempts=self.limits.followup_read_attempts,
                wait_seconds=self.limits.followup_read_wait_seconds,
            )
            if not replies:
                break
            case = registry.load_case(case_id)
            if is_approval(replies[-1], operator) and _awaits_approval(case):
                done.turns.append(self._approve(case, folder, thread, trigger_kind, replies))
                break
            done.turns.append(self._answer(case, folder, thread, trigger_kind, replies))
        if not done.turns:
            after = memstate.load(folder).answered.get(thread.key)
            if trigger_ts and (after is None or float(trigger_ts) > float(after)):
                # Slack never showed it within the read attempts: the next run answers it.
                event(log, "followup_reply_unseen", logging.WARNING, case_id=case_id,
                      ts=trigger_ts)  # fmt: skip
                done.note = (
                    f"reply {trigger_ts} is not visible in the thread yet; the next followup "
                    f"(the next reply, or `harness followup {case_id}`) answers it"
                )
            else:
                done.note = "no new replies: everything in the thread is answered"
            return done
        done.gap_reports = self._maybe_gap_analysis(case, folder)
        first, last = done.turns[0].transcript, done.turns[-1].transcript
        registry.sync(
            f"case {case_id}: followup {first}" + (f"..{last}" if last != first else ""),
            self.cfg.harness.thresholds,
            only=[folder],
        )
        done.consolidation = self._maybe_consolidate(case, folder, thread)
        return done

    # -- one turn -----------------------------------------------------------------------------
    def _answer(
        self, case: Case, folder: Path, thread: Thread, kind: str, replies: list[Reply]
    ) -> Turn:

        ticket_side = not thread.in_self_dm
        built = followup_prompt.build(
            followup_prompt.FollowupInputs(
                case_id=case.id,
                project=case.project,
                status=case.status,
                case_dir=str(folder),
                ticket=read_ticket(folder),
                task_md=_read(folder / "TASK.md"),
                analysis_md=_read(folder / "ANALYSIS.md"),
                transcripts=transcripts.unconsolidated(folder),
                replies=replies,
                audience=followup_prompt.TICKET_AUDIENCE
                if ticket_side
                else followup_prompt.OPERATOR_AUDIENCE,
            ),
            lambda **values: render(self.cfg, "followup", **values),
            self.limits.followup_prompt_budget_chars,
        )
        if built.omitted or built.cut:
            event(log, "followup_prompt_trimmed", logging.WARNING, case_id=case.id,
                  omitted=built.omitted, cut=built.cut)  # fmt: skip
        answer = self._ask(case, folder)("followup", built.text).strip()
        if not answer:
            raise ServiceError("the followup model answered with no text", hint="re-run it")
        text = answer
        if ticket_side:
            quoted = "\n".join(f"> <@{r.user}>: {r.text}" for r in replies)
            text = f"New in the ticket thread:\n{quoted}\n\n{answer}"
        turn = Turn("", [r.ts for r in replies], prompt_chars=len(built.text))
        turn.left_out = built.omitted
        turn.posted_ts = self._post(case, text)
        return self._record(case, folder, thread, kind, replies, answer, turn)

    def _approve(
        self, case: Case, folder: Path, thread: Thread, kind: str, replies: list[Reply]
    ) -> Turn:

        answer = execute(self.admin, AdminCommand("task", (case.id,)))
        event(log, "followup_approval", case_id=case.id, reply_ts=replies[-1].ts, result=answer)
        turn = Turn("", [r.ts for r in replies], approval=True)
        turn.posted_ts = self._post(case, answer)
        return self._record(case, folder, thread, kind, replies, answer, turn)

    def _record(
        self, case: Case, folder: Path, thread: Thread, kind: str, replies: list[Reply],
        answer: str, turn: Turn,
    ) -> Turn:  # fmt: skip
        said = "\n\n".join(f"## <@{r.user}> · {r.ts} · {r.where}\n\n{r.text}" for r in replies)
        meta = transcripts.TranscriptMeta(
            case_id=case.id,
            at=clock.now(),
            trigger=kind,
            thread=thread.key,
            replies=turn.replies,
            posted_ts=turn.posted_ts,
            approval=turn.approval,
            prompt_chars=turn.prompt_chars,
            left_out=turn.left_out,
        )
        path = transcripts.write(folder, meta, f"{said}\n\n## harness\n\n{answer}")
        turn.transcript = path.name
        with memstate.update(case.id, folder) as memory:
            memory.answered[thread.key] = replies[-1].ts
            memory.turns += 1
            memory.replies_since_gap += len(replies)
        event(log, "followup_turn", case_id=case.id, transcript=path.name, replies=turn.replies,
              approval=turn.approval, prompt_chars=turn.prompt_chars)  # fmt: skip
        return turn

    def _post(self, case: Case, text: str) -> str | None:
        if self.out is None:
            return None
        limit = self.limits.answer_max_chars
        if len(text) > limit:
            text = text[: limit - 80] + "\n[… cut; the whole answer is in the transcript]"

        try:
            return post_to_case(self.cfg, self.out, case.id, case.kind, text)
        except Owed as exc:  # recorded: a later run posts it; the turn is answered
            event(log, "followup_answer_owed", logging.WARNING, case_id=case.id,
                  error=exc.line())  # fmt: skip
            return None

    # -- after the turns ----------------------------------------------------------------------
    def _maybe_gap_analysis(self, case: Case, folder: Path) -> list[str]:
        every = self.limits.gap_analyzer_every_replies
        memory = memstate.load(folder)
        if memory.replies_since_gap < every:
            return []
        recent = [t for t in transcripts.list_all(folder) if t.number > memory.gap_through]
        try:
            written = analyze(self.cfg, self._ask(case, folder), case_id=case.id,
                              project=case.project, case_dir=folder, ticket=read_ticket(folder),
                              recent=recent, every=every)  # fmt: skip
        except HarnessError as exc:
            # The answer is already posted; the analysis runs again after the next reply.
            event(log, "gap_analysis_failed", logging.WARNING, case_id=case.id, error=exc.line())
            return []
        with memstate.update(case.id, folder) as memory:
            memory.replies_since_gap = 0
            memory.gap_through = max((t.number for t in recent), default=memory.gap_through)
        return [p.name for p in written]

    def _maybe_consolidate(self, case: Case, folder: Path, thread: Thread) -> list[str]:
        check = evaluate(self.limits, now=clock.now(), state=memstate.load(folder),
                         pending=transcripts.unconsolidated(folder), case=case)  # fmt: skip
        if not check.fires:
            return []
        event(log, "consolidate_trigger", case_id=case.id, signals=check.fired,
              reasons=check.reasons)  # fmt: skip
        kind = "consolidate_trigger"
        if not pause.allow(kind, case_id=case.id, detail=f"consolidate ({kind})"):
            return check.fired
        payload = Payload(
            workflow="consolidate",
            case_id=case.id,
            case_dir=str(folder),
            channel=thread.channel,
            thread_ts=thread.thread_ts,
            trigger=Trigger(kind=kind),
            args={"signals": check.fired},
        )
        dispatch.dispatch(payload, backend=choose_backend(self.cfg.harness.dispatch))
        return check.fired

    # -- plumbing -----------------------------------------------------------------------------
    def _ask(self, case: Case, folder: Path) -> MemoryRunner:
        if self.runner is None:
            self.runner = build(self.cfg, folder, case.project, self.limits, self.doors.runtime)
        return self.runner

    def _case_thread(self, case: Case) -> Thread:
        entry = case_thread(case.id, case.kind)
        if entry is None:
            raise InputError(
                f"case {case.id} has no case thread in the self-DM to read replies from",
                hint="run it from its dispatch payload, or link a thread with "
                "`harness case register-thread`",
            )
        return Thread(entry.channel, entry.thread_ts, in_self_dm=True)


def _awaits_approval(case: Case) -> bool:
    return case.status == "awaiting_approval" or (
        case.plan_pending and case.status in ("approved", "in_progress")
    )


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
