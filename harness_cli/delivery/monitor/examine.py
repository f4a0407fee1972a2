"""One open MR, examined: what its head pipeline, merge status and discussions call for, which
of that may be done now, and the record of what was done.

Order of precedence within one MR and one cycle: an escalation DM, then the push recovery,
then a CI fix, then review replies — and at most one dev-agent dispatch, because the dev-agent
runs under a per-case lock and a second one would exit 3 with its event lost. Whatever is not
dispatched now (second in line, dev-agent busy, held back by the pause) leaves the MR
``pending`` and unrecorded, so the next cycle finds it again.

Four gates, in this order: the per-MR pause (``admin: mr pause`` — and an escalation) mutes
the MR: CI events meanwhile are recorded as seen, reviewer notes are *held* — none is marked
handled, and each is answered once after ``mr resume`` / ``mr rescan``; the global pause holds
automatic work back and keeps it for after the pause; the review round budget holds notes past
a few rounds a day (one notice on the MR, one DM); ``admin: mr rescan`` is the operator's own
intent, so its dispatches pass the global pause and the budget.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from harness_cli import clock
from harness_cli.delivery.monitor import decide as decide
from harness_cli.delivery.monitor import notices as notices
from harness_cli.delivery.monitor.act import (
    MonitorCtx,
    call,
    dev_agent_busy,
    dm,
    save_trace,
    start_dev_agent,
)
from harness_cli.dispatch.payload import Trigger
from harness_cli.errors import HarnessError
from harness_cli.intake import pause
from harness_cli.logs import event
from harness_cli.services.gitlab import MergeRequest
from harness_cli.state import files
from harness_cli.state.models import FixAttempt, MonitoredMr

log = logging.getLogger("harness.mr_monitor")

_OWNED = (
    "state",
    "last_sha",
    "ci_status",
    "seen_updated_at",
    "examined_at",
    "merge_status",
    "head_pipeline_id",
    "last_pipeline_id",
    "last_fix_sha",
    "fix_ci_attempts",
    "fix_attempts",
    "recover_attempts",
    "last_recover_sha",
    "escalated",
    "handled_notes",
    "pending",
    "target_branch",
    "held",
    "review_rounds",
    "loop_rounds",
    "review_budget_noticed",
    "fix_result_seen",
)
"""The fields mr-monitor writes; ``paused`` and ``rescan_requested`` belong to the operator's
admin commands and are written only when this examination changed them."""


@dataclass
class Action:
    kind: str
    """``escalate_ci``, ``escalate_recover``, ``recover``, ``fix_ci`` or ``address_review``."""
    trigger: str = "ci_failed"
    reviews: list[decide.ReviewWork] = field(default_factory=list)


class Examination:
    def __init__(
        self,
        ctx: MonitorCtx,
        key: str,
        entry: MonitoredMr,
        mr: MergeRequest,
        *,
        me: str,
        globally_paused: bool,
    ) -> None:
        self.ctx = ctx
        self.key = key
        self.before = entry
        self.work = entry.model_copy(deep=True)
        self.mr = mr
        self.me = me
        self.globally_paused = globally_paused
        self.rescan = entry.rescan_requested
        self.pipeline: dict[str, Any] = dict(mr.head_pipeline or {})
        self.max = ctx.thresholds.fix_ci_max_consecutive
        self._attempt: FixAttempt | None = None
        self._job_name = ""

    @property
    def pipeline_id(self) -> int:
        return int(self.pipeline.get("id") or 0)

    def run(self) -> None:
        w = self.work
        if w.escalated and (self.rescan or not w.paused):
            self._rearm(forget=self.rescan)  # the operator acted: resume or rescan
        full = (
            self.rescan
            or self.before.pending
            or (self.before.held and not w.paused)
            or not self.before.seen_updated_at
            or self.mr.updated_at != self.before.seen_updated_at
        )
        w.pending = False
        if not w.paused:
            w.held = False  # set again below if notes must wait for the review budget
        w.state, w.last_sha = self.mr.state, self.mr.sha or w.last_sha
        w.target_branch = self.mr.target_branch
        w.merge_status = self.mr.detailed_merge_status
        w.head_pipeline_id = self.pipeline_id
        w.ci_status = str(self.pipeline.get("status") or "")
        actions = self._decide(full)
        self._save()  # what was learnt (green resets, seen pipelines) holds even if acting fails
        try:
            self._act(actions)
        except HarnessError:
            # a DM or a log fetch failed: whatever was not recorded is found again next cycle,
            # even when the MR itself does not change again
            w.pending = True
            self._save()
            raise
        w.rescan_requested = False
        w.examined_at = clock.now()
        if full:
            w.seen_updated_at = self.mr.updated_at
        self._save()

    # -- deciding -----------------------------------------------------------------------------
    def _decide(self, full: bool) -> list[Action]:
        w, mr = self.work, self.mr
        actions: list[Action] = []
        retry_noop = self._fix_result()
        recover = decide.recover_verdict(
            w,
            mr.detailed_merge_status,
            mr.sha,
            max_consecutive=self.max,
            has_conflicts=mr.has_conflicts,
        )
        if recover == "none":
            w.recover_attempts = 0
        elif recover == "recover":
            actions.append(Action("recover", trigger="ci_event"))
        elif recover == "escalate":
            actions.append(Action("escalate_recover"))
        conflicted = mr.detailed_merge_status in decide.RECOVER_STATUSES or mr.has_conflicts
        verdict = decide.ci_verdict(
            w, self.pipeline, max_consecutive=self.max, retry_noop=retry_noop
        )
        if verdict == "green":
            w.last_pipeline_id = self.pipeline_id
            w.fix_ci_attempts, w.fix_attempts = 0, []  # "a green pipeline resets the count"
            if w.escalated:
                self._rearm(forget=False)
        elif verdict in ("not_new", "other") or (verdict in ("fix", "escalate") and conflicted):
            # a retry on the attempted sha is not a new failure; on a conflicting branch the
            # push recovery, not a CI fix, is the answer
            w.last_pipeline_id = self.pipeline_id
        elif verdict == "fix":
            actions.append(Action("fix_ci"))
        elif verdict == "escalate":
            actions.append(Action("escalate_ci"))
        if full:
            discussions = call(self.ctx, lambda: self.ctx.gitlab.discussions(mr.project, mr.iid))
            reviews = decide.discussions_to_answer(
                discussions,
                me=self.me,
                handled=w.handled_notes,
                ignored=self.ctx.thresholds.ignored_authors,
            )
            if reviews:
                actions.append(Action("address_review", trigger="review_note", reviews=reviews))
        order = ("escalate_ci", "escalate_recover", "recover", "fix_ci", "address_review")
        return sorted(actions, key=lambda a: order.index(a.kind))

    def _fix_result(self) -> bool:
        """What the last fix_ci run reported, once: its outcome goes into the attempt record,
        and a run that changed nothing on this very pipeline asks for the next attempt (or the
        escalation). A run whose push ended in L3 already told the operator: the MR is then
        escalated without a second DM; so is one that failed outright (its reason went out)."""
        w, result = self.work, self.work.fix_result
        if result is None or result.id == w.fix_result_seen:
            return False
        w.fix_result_seen = result.id
        if w.fix_attempts and result.pipeline_id in (0, w.fix_attempts[-1].pipeline_id):
            w.fix_attempts[-1].outcome, w.fix_attempts[-1].summary = result.outcome, result.summary
        if result.outcome in ("push_failed", "not_recovered", "failed"):
            w.escalated = w.paused = True
            return False
        return result.outcome == "no_change" and result.pipeline_id == self.pipeline_id

    # -- acting -------------------------------------------------------------------------------
    def _act(self, actions: list[Action]) -> None:
        dispatched = False
        busy: bool | None = None
        for action in actions:
            if self.work.paused:
                if action.kind == "address_review":
                    self.work.held = True  # answered after mr resume / rescan, once each
                else:
                    self._record(action)
                self.ctx.report.muted.append(f"{action.kind} {self.key}")
                continue
            if action.kind == "address_review" and not self._within_review_budget(action):
                continue
            if action.kind.startswith("escalate"):
                self._escalate(action)
                continue
            if busy is None:
                busy = dev_agent_busy(self.work.case_id)
            if dispatched or busy:
                self.work.pending = True
                self.ctx.report.deferred.append(f"{action.kind} {self.key}")
                continue
            kind = "admin_command" if self.rescan else action.trigger
            detail = f"dev-agent {action.kind} {self.key}"
            if not pause.allow(kind, case_id=self.work.case_id, detail=detail):
                self.work.pending = True
                self.ctx.report.held_back.append(f"{action.kind} {self.key}")
                continue
            if not start_dev_agent(self.ctx, self.work, self._args(action), self._trigger(action)):
                self.work.pending = True
                self.ctx.report.deferred.append(f"{action.kind} {self.key}")
                continue
            dispatched = True
            if action.kind == "address_review":
                hours = self.ctx.thresholds.review_round_window_hours
                now = clock.now()
                self.work.review_rounds = [*decide.rounds_in_window(self.work, now, hours), now]
                if any(r.follows_reply for r in action.reviews):
                    self.work.loop_rounds = [
                        *decide.rounds_in_window(self.work, now, hours, loops=True),
                        now,
                    ]
                if not self.rescan:  # the operator's own round does not re-arm the notice
                    self.work.review_budget_noticed = False
            self._record(action)
            self._save()
            self.ctx.report.dispatched.append(f"dev-agent {action.kind} {self.key}")
            event(log, "mr_dispatch", mr=self.key, case_id=self.work.case_id, mode=action.kind)

    def _within_review_budget(self, action: Action) -> bool:
        """#21: "11 reviewer notes gave 10 address_review runs and 10 replies — a bot-vs-bot
        review loop would run for ever." Past the budget: held, one notice, one DM.

        #34 item 14: the budget stops loops, not reviews. Only a round that answers a note
        written after the harness's own reply in that discussion counts (and is held past the
        budget); a note in a discussion the harness never answered is ordinary review and is
        answered whatever the count — before, the fifth note of an ordinary review was held."""
        th, w = self.ctx.thresholds, self.work

        def allowed(*, loop: bool) -> bool:
            return decide.review_round_allowed(
                w,
                clock.now(),
                budget=th.review_round_budget,
                window_hours=th.review_round_window_hours,
                ceiling=th.review_round_ceiling,
                loop=loop,
            )

        if self.rescan or allowed(loop=True):
            return True
        under_ceiling = allowed(loop=False)
        fresh = [r for r in action.reviews if not r.follows_reply] if under_ceiling else []
        w.held = True  # the follow-ups stay unhandled: answered once the window frees a round
        self.ctx.report.muted.append(f"review budget {self.key}")
        if not w.review_budget_noticed:
            notices.review_budget_spent(self.ctx, self.key, w, self.mr)
            w.review_budget_noticed = True
        action.reviews = fresh
        return bool(fresh)

    def _args(self, action: Action) -> dict[str, Any]:
        where = {"mr": self.key, "branch": self.mr.source_branch}
        if action.kind == "address_review":
            ids = [r.discussion_id for r in action.reviews]
            notes = {r.discussion_id: r.note_id for r in action.reviews}
            return {"mode": "address_review", **where, "discussions": ids, "notes": notes}
        if action.kind == "recover":
            return {
                "mode": "fix_ci",
                **where,
                "merge_status": self.mr.detailed_merge_status or "conflict",
                "target_branch": self.mr.target_branch,
            }
        job_id, path = self._fetch_trace()
        self._attempt = FixAttempt(
            pipeline_id=self.pipeline_id,
            sha=str(self.pipeline.get("sha") or ""),
            job_id=job_id,
            job=self._job_name,
            trace_file=path,
            at=clock.now(),
        )
        return {
            "mode": "fix_ci",
            **where,
            "pipeline_id": self.pipeline_id,
            "trace_file": path,
        }

    def _trigger(self, action: Action) -> Trigger:
        kind = "admin_command" if self.rescan else action.trigger
        user = action.reviews[0].author if action.reviews else ""
        return Trigger(kind=kind, user=user, ts=self.mr.updated_at)

    def _fetch_trace(self) -> tuple[int, str]:
        """The failed job's whole log into ``<case_dir>/ci/<pipeline>-<job>.log``."""
        gl, project, pid = self.ctx.gitlab, self.mr.project, self.pipeline_id
        jobs = call(self.ctx, lambda: gl.pipeline_jobs(project, pid), missing_is_gone=False)
        job = decide.failed_job(jobs)
        if job is None:
            text = f"pipeline {pid} failed, but none of its {len(jobs)} job(s) reports failed\n"
            return 0, str(save_trace(self.work, pid, 0, text))
        job_id = int(job["id"])
        self._job_name = str(job.get("name") or "")
        text = call(self.ctx, lambda: gl.job_trace(project, job_id), missing_is_gone=False)
        return job_id, str(save_trace(self.work, pid, job_id, text))

    def _record(self, action: Action) -> None:
        """What "handled" means for each kind, dispatched or muted alike."""
        w = self.work
        if action.kind == "address_review":
            for r in action.reviews:
                w.handled_notes[r.discussion_id] = r.note_id
        elif action.kind in ("recover", "escalate_recover"):
            w.last_recover_sha = self.mr.sha
            if action.kind == "recover" and not w.paused:
                w.recover_attempts += 1
        else:
            w.last_pipeline_id = self.pipeline_id
            if action.kind == "fix_ci" and not w.paused:
                w.last_fix_sha = str(self.pipeline.get("sha") or "")
                w.fix_ci_attempts += 1
                sha = w.last_fix_sha
                w.fix_attempts.append(
                    self._attempt or FixAttempt(pipeline_id=self.pipeline_id, sha=sha)
                )

    def _escalate(self, action: Action) -> None:
        """ONE DM with the whole trail, then the MR is paused until the operator acts."""
        if action.kind == "escalate_ci":
            text = self._ci_escalation_text(self._fetch_trace()[1])
        else:
            text = (
                f"{self.key}: still `{self.mr.detailed_merge_status}` against "
                f"`{self.mr.target_branch}` after {self.work.recover_attempts} push recovery "
                f"run(s). {self.mr.web_url}\n{notices.rearm_hint(self.key)}"
            )
        dm(self.ctx, self.work.case_id, text, terminal=True,
           event_key=f"{self.key}:{action.kind}:{self.pipeline_id}:{self.mr.sha}")  # fmt: skip
        self._record(action)
        self.work.escalated = True
        self.work.paused = True
        self._save()
        self.ctx.report.escalated.append(self.key)
        event(log, "mr_escalated", logging.WARNING, mr=self.key, case_id=self.work.case_id)

    def _ci_escalation_text(self, trace_file: str) -> str:
        return notices.ci_escalation(
            self.ctx, self.key, self.work, self.mr, self.pipeline, self._job_name, trace_file
        )

    def _rearm(self, *, forget: bool) -> None:
        w = self.work
        w.escalated = False
        w.paused = False
        w.fix_ci_attempts, w.fix_attempts, w.recover_attempts = 0, [], 0
        if forget:  # rescan: the operator asks for a fresh attempt on what is there now
            w.last_pipeline_id, w.last_fix_sha, w.last_recover_sha = 0, "", ""
        event(
            log, "mr_rearmed", mr=self.key, case_id=w.case_id, by="rescan" if forget else "resume"
        )

    def _save(self) -> None:
        with files.monitored_mrs().update() as state:
            current = state.mrs.get(self.key)
            if current is None:
                return  # dropped meanwhile
            for name in _OWNED:
                setattr(current, name, getattr(self.work, name))
            if self.work.paused != self.before.paused:
                current.paused = self.work.paused
            if self.rescan and not self.work.rescan_requested:
                current.rescan_requested = False
