"""The shared tail of every dev-agent mode: change → checks → commit → acceptance → push → MR.

The agent edits (and may commit); the harness commits what it left under a linted message,
runs the required checks itself (fail-closed, weakened checks included), pushes with recovery
and submits the MR with the harness's own proof of work. :class:`Change` is the evidence the
reply gate and the outcome message read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from harness_cli.delivery import acceptance, check_guard, mr, worktrees
from harness_cli.delivery.commit import (
    commit_all,
    head_sha,
    outside_task_paths,
    styled_message,
)
from harness_cli.delivery.push import recovery as push
from harness_cli.delivery.push.rebase import wire_tip
from harness_cli.delivery.style import lint_commit_message, strip_attribution
from harness_cli.delivery.work import Work, move_case
from harness_cli.errors import PolicyRefused, ServiceError
from harness_cli.logs import event
from harness_cli.loop.jsonblocks import json_objects
from harness_cli.loop.prompts import sops_dir
from harness_cli.sessions import guard as write_guard
from harness_cli.sessions.lifecycle import current
from harness_cli.sessions.outcome import INSTRUCTION

log = logging.getLogger("harness.dev_agent")

BUILD_LOOPS = 3
""""The implement phase runs the skeleton once but loops its build step three times"."""
STYLE_RETRIES = 2
"""A style violation goes back to the agent, never out; after this many tries the run fails."""


@dataclass
class Change:
    """What the shared tail did: the evidence the outcome message and the reply gate use."""

    mode: str
    changed: bool
    meta: dict[str, Any] = field(default_factory=dict)
    record: acceptance.AcceptanceRecord | None = None
    outcome: push.PushOutcome | None = None
    commits: list[str] = field(default_factory=list)
    """Subjects of the commits this run made (what changed)."""
    left_out: list[str] = field(default_factory=list)
    """New files the agent left that were not committed (#21 p2: outside the task's paths, or
    named like a secret); the outcome message names them for the operator's OK."""
    mr: dict[str, Any] | None = None

    @property
    def pushed(self) -> bool:
        return self.outcome is not None and self.outcome.pushed

    @property
    def pushed_sha(self) -> str:
        return (self.outcome.pushed_sha or "") if self.outcome is not None else ""

    def summary(self) -> str:
        return " ".join(str(self.meta.get("summary") or self.meta.get("reply") or "").split())


def change_push_and_mr(
    work: Work, wt: worktrees.Worktree, mode: str, job: str, *, target: str | None = None
) -> Change:
    before = head_sha(wt.path)
    style = mr.compose_prompt_section(sops_dir(work.cfg))
    change = Change(mode=mode, changed=False)
    guarded = False
    job = _with_session(job)
    for _ in range(BUILD_LOOPS):
        text = work.agent("dev-agent", "dev-agent", wt, mode=mode, job=job, style=style)
        _session_heard(text)
        change.meta = _last_json(text) or change.meta
        _commit_with_style(work, wt, change.meta, before)
        blocked = _write_guard(wt)
        if blocked and not guarded:  # one chance to give the files back, like the other guards
            guarded = True
            job = write_guard.revert_note(blocked, wt.base_sha)
            continue
        if blocked:
            raise PolicyRefused(
                blocked[0].render(),
                hint="nothing was pushed; the holder's session must end first",
            )
        change.left_out = outside_task_paths(wt.path)
        change.record = acceptance.run_acceptance(
            wt.path, work.checks(), work.case_dir, base_sha=wt.base_sha,
            approved=check_guard.approved_digests(work.case_dir), box=work.cfg.harness.sandbox,
        worktrees=work.cfg.harness.delivery.root(),
        )  # fmt: skip
        _session_checks(change.record)
        if change.record.passed:
            break
        job = _redo(work, wt, change.record)
    change.changed = head_sha(wt.path) != before
    change.commits = _subjects(wt, before)
    if not change.changed:
        since = _stranded(work, wt, mode)
        if since is None:
            event(log, "no_change_no_push", case_id=work.case.id, mode=mode)
            return change
        # #20 p4: an earlier run committed and died (or failed to push, or to open the MR):
        # its commits are this case's change, finished now instead of "nothing pushed".
        change.changed, change.commits = True, _subjects(wt, since)
        event(log, "stranded_commits_adopted", case_id=work.case.id, mode=mode, since=since)
    change.outcome = push.push_with_recovery(
        wt, runtime=work.runtime, outbound=work.out, forge=work.gitlab, cfg=work.cfg,
        case_id=work.case.id, case_dir=work.case_dir, task_text=job, target=target,
    )  # fmt: skip
    if change.pushed:
        change.commits = _subjects(wt, before)  # as pushed (the pre-push check may reword)
        change.mr = _submit(work, wt, change.meta, change.record)
    return change


def _with_session(job: str) -> str:
    """The session's briefing (who last worked here, what they left) and the one
    ``report_outcome`` answer the harness asks for (004: the agent knows its session, it does
    not own it)."""

    session = current()
    if session is None:
        return job
    return "\n\n".join(
        [job, *session.briefing, f"Work session {session.record.name}. {INSTRUCTION}"]
    )


def _session_checks(record: acceptance.AcceptanceRecord) -> None:
    session = current()
    if session is not None:
        session.checks = [{"command": c.command, "exit_code": c.exit_code} for c in record.checks]


def _session_heard(text: str) -> None:
    session = current()
    if session is not None:
        session.agent_said(text)


def _write_guard(wt: worktrees.Worktree) -> list[write_guard.Blocked]:
    return write_guard.write_guard(wt.project, wt.path, write_guard.run_base(wt))


def _stranded(work: Work, wt: worktrees.Worktree, mode: str) -> str | None:
    """Where the case's undelivered commits start, when an earlier run left some: commits the
    remote branch does not have, or (a task) a pushed branch whose MR was never opened. None:
    nothing stranded."""

    head = head_sha(wt.path)
    if head == wt.base_sha:
        return None
    try:
        tip = wire_tip(wt)
    except ServiceError:
        tip = None  # the push will tell; never drop the commits on a failed look
    if tip != head:
        return tip if tip and wt.git().is_ancestor(tip, head) else wt.base_sha
    if mode == "task" and not any(m.state == "opened" for m in work.case.mrs):
        return wt.base_sha
    return None


def _redo(work: Work, wt: worktrees.Worktree, record: acceptance.AcceptanceRecord) -> str:
    failures = _check_failures(record)
    if record.tests_weakened and not failures:
        return (
            "The tests CI reported failing must pass, not go away: your change "
            + "; ".join(record.tests_weakened)
            + ". Put them back as they were and fix the code (or, if a test pinned the bug, "
            "update what it expects — it must still run and assert)."
        )
    if record.checks_changed and not record.checks_approved and not failures:
        return (
            "You changed what the required checks run ("
            + ", ".join(record.checks_changed)
            + "). Put those files back as they were and fix the code itself; a change to the "
            "checks needs the operator's OK.\n"
            + check_guard.describe(wt.path, wt.base_sha, record.checks_changed)
        )
    return (
        "The harness ran the required checks and they failed:\n"
        + failures
        + ("\nFix the code until they pass.")
    )


def _commit_with_style(
    work: Work, wt: worktrees.Worktree, meta: dict[str, Any], before: str
) -> None:
    """The harness's commit of what the agent left. An agent commit this run whose message
    the SOP forbids for more than attribution (which the pre-push check rewords) is folded
    into it, under the message that passed the linter."""

    def resend(notes: list[str]) -> dict[str, Any]:
        work.notes = notes
        return _resend(work, wt, "commit message")

    git = wt.git()
    own = git.run("rev-list", f"{before}..HEAD").split() if before else []
    bad = [s for s in own if lint_commit_message(strip_attribution(_message(wt, s)))]
    dirty = bool(git.status_porcelain().strip())
    if not bad and not dirty:
        return
    message = styled_message(meta, resend, STYLE_RETRIES)
    if bad:
        git.run("reset", "-q", "--soft", before)
    commit_all(wt.path, message)


def _submit(
    work: Work,
    wt: worktrees.Worktree,
    meta: dict[str, Any],
    record: acceptance.AcceptanceRecord | None,
) -> dict[str, Any]:
    for _ in range(STYLE_RETRIES + 1):
        try:
            done = mr.submit_mr(
                work.gitlab, project=work.project, source_branch=wt.branch,
                target_branch=wt.base_branch,
                title=str(meta.get("mr_title") or work.case.title),
                description=str(meta.get("mr_description") or ""),
                commit_messages=_messages(wt), case_id=work.case.id, case_dir=work.case_dir,
                acceptance=record, head_sha=head_sha(wt.path),
                thresholds=work.cfg.harness.thresholds,
            )  # fmt: skip
        except mr.StyleRejected as exc:
            work.notes = [f"[STYLE] {v.render()}" for v in exc.violations]
            meta.update(_resend(work, wt, "MR description"))
            continue
        move_case(work, "mr_open", "MR open")
        return {
            "web_url": done.web_url,
            "iid": done.iid,
            "ready": done.ready,
            "adopted": done.adopted,
        }
    raise PolicyRefused(
        "the MR description kept breaking the style SOP",
        hint="the branch is pushed; no MR was opened",
    )


def _resend(work: Work, wt: worktrees.Worktree, what: str) -> dict[str, Any]:
    """A style violation goes back to the agent (the guard notes say which), never out."""
    text = work.agent(
        "dev-agent", "dev-agent", wt, mode=what,
        job=f"The {what} was sent back. Give only the JSON block again, fixed.",
        style=mr.compose_prompt_section(sops_dir(work.cfg)),
    )  # fmt: skip
    return _last_json(text)


def _message(wt: worktrees.Worktree, sha: str) -> str:
    return wt.git().run("show", "-s", "--format=%B", sha)


def _subjects(wt: worktrees.Worktree, before: str) -> list[str]:
    if not before:
        return []
    out = wt.git().run("log", "--reverse", "--format=%s", f"{before}..refs/heads/{wt.branch}")
    return [line for line in out.splitlines() if line.strip()]


def _messages(wt: worktrees.Worktree) -> list[str]:
    out = wt.git().run("log", "--format=%B%x00", f"{wt.base_sha}..refs/heads/{wt.branch}")
    return [m.strip() for m in out.split("\0") if m.strip()]


def _check_failures(record: acceptance.AcceptanceRecord) -> str:
    return "\n".join(
        f"$ {c.command}  (exit {c.exit_code})\n{c.output_tail[-1500:]}"
        for c in record.checks
        if c.exit_code != 0
    )


def _last_json(text: str) -> dict[str, Any]:
    keys = ("commit_message", "mr_description", "reply", "replies", "summary")
    blocks = [b for b in json_objects(text) if any(k in b for k in keys)]
    return blocks[-1] if blocks else {}
