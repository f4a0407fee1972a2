"""dev-agent: the hands-on work, in the case's own worktree of the MR's repository.

- ``task``: analyze (the gated skeleton, up to 8 rounds, producing the plan) → [the operator's
  OK unless --auto] → implement (one run; its build/test step looped up to 3 times against the
  harness's own acceptance run) → acceptance → push (L1/L2/L3) → MR.
- ``fix_ci`` (:mod:`ci_fix`): the failed job's log → a fix → acceptance → push; a run that
  changed nothing pushes nothing and says so to mr-monitor, which counts it as a failed
  attempt. A conflict with the target branch runs the push recovery onto that branch.
- ``address_review`` (:mod:`review`): the unresolved discussions → changes → push → a reply
  in each discussion only when the wire shows this run's commit on the remote branch.

The agent edits and commits; the harness runs the checks, pushes and talks to GitLab and
Slack. Nothing the model says about its own success is taken as success. Each run ends in one
message to the operator (:mod:`outcome`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_cli.agents.runtime import RunRequest, Runtime
from harness_cli.config import Config
from harness_cli.delivery import acceptance, check_guard, mr, push, worktrees
from harness_cli.delivery.commit import commit_all, head_sha, styled_message
from harness_cli.delivery.style import lint_commit_message, strip_attribution
from harness_cli.errors import InputError, PolicyRefused, ServiceError
from harness_cli.investigation.gates import evaluate_text
from harness_cli.investigation.gates.a_gates import pinned_block
from harness_cli.investigation.gates.notes import pending_guard_notes, render_guard_notes
from harness_cli.investigation.jsonblocks import json_objects
from harness_cli.investigation.prompts import render, sops_dir
from harness_cli.investigation.report import CompletionReport
from harness_cli.investigation.verdict import Verdict
from harness_cli.logs import event
from harness_cli.ops.outbound import Outbound
from harness_cli.ops.status_message import RunStatus, observe
from harness_cli.services.gitlab import GitLab
from harness_cli.workspace import registry
from harness_cli.workspace.case import Case

log = logging.getLogger("harness.dev_agent")

ANALYZE_ROUNDS = 8
""""The task-analyze phase gets up to 8" iterations of the gated skeleton."""
BUILD_LOOPS = 3
""""The implement phase runs the skeleton once but loops its build step three times"."""
STYLE_RETRIES = 2
"""A style violation goes back to the agent, never out; after this many tries the run fails."""


@dataclass
class Work:
    cfg: Config
    case: Case
    case_dir: Path
    runtime: Runtime
    gitlab: GitLab
    out: Outbound
    args: dict[str, Any]
    quiet: bool = False
    """No outcome message in Slack (L3 escalations still go out)."""
    notes: list[str] = field(default_factory=list)
    status: RunStatus | None = None
    """The live status message in the case thread; delivery.run closes it with the outcome."""

    @property
    def project(self) -> str:
        """The repository this run works on: the payload names it (``repo``), or the MR does;
        only a task with neither falls back to the ticket project's first repo."""
        repo = self.args.get("repo")
        if repo:
            return str(repo)
        if "mr" in self.args:
            return str(self.args["mr"]).rsplit("!", 1)[0]
        repos = self.cfg.projects.projects[self.case.project].repos
        if not repos:
            raise InputError(
                f"project {self.case.project} lists no GitLab repos",
                hint="add repos: [group/project] to projects.yaml",
            )
        return repos[0]

    def checks(self) -> list[str]:
        """The checks of the repo being changed: the harness's own (`make test`) for its
        improvement MRs, else the ticket project's required checks."""
        improvement = self.cfg.harness.improvement
        if self.project == improvement.self_repo:
            return list(improvement.self_repo_checks)
        return list(self.cfg.projects.projects[self.case.project].required_checks)

    def agent(self, role: str, template: str, wt: worktrees.Worktree, **values: str) -> str:
        prompt = render(
            self.cfg,
            template,
            case_id=self.case.id,
            project=self.case.project,
            worktree=str(wt.path),
            branch=wt.branch,
            guard_notes=render_guard_notes(self.notes),
            **values,
        )
        self.notes = []
        if self.status is not None:
            self.status.start(role)
        result = self.runtime.run(
            RunRequest(
                role=role,
                prompt=prompt,
                workdir=wt.path,
                allowed_root=wt.path,
                protect=(self.case_dir,),
                max_turns=40,
                timeout_s=1200,
                on_event=observe(self.status, case_id=self.case.id, role=role),
            )
        )
        event(
            log, "dev_agent_run", case_id=self.case.id, role=role, stop=result.stop,
            turns=result.turns, cost_usd=result.cost_usd, input_tokens=result.usage.input,
            output_tokens=result.usage.output, cache_creation_tokens=result.usage.cache_creation,
            cache_read_tokens=result.usage.cache_read, reverted=result.reverted,
        )  # fmt: skip
        if result.stop in ("error", "timeout") and not result.text:
            raise ServiceError(f"the {role} run failed: {result.error or result.stop}")
        return result.text


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
    mr: dict[str, Any] | None = None

    @property
    def pushed(self) -> bool:
        return self.outcome is not None and self.outcome.pushed

    @property
    def pushed_sha(self) -> str:
        return (self.outcome.pushed_sha or "") if self.outcome is not None else ""

    def summary(self) -> str:
        return " ".join(str(self.meta.get("summary") or self.meta.get("reply") or "").split())


def worktree_for(work: Work) -> worktrees.Worktree:
    """The case's worktree of the run's repository — never another repository's (the ticket's
    worktree is not the harness repo's). An MR's branch names the key outright."""
    found = worktrees.for_case_repo(work.case.id, work.project)
    branch = str(work.args.get("branch") or "")
    if found is None:
        info = work.gitlab.project(work.project)
        found = worktrees.create(
            worktrees.worktree_key(work.case.id, work.project, branch=branch or None),
            str(info["http_url_to_repo"]),
            work.project,
            str(info.get("default_branch") or "main"),
            thresholds=work.cfg.harness.delivery,
            case=work.case.id,
        )
    else:  # the identity may have been configured since the worktree was made
        worktrees.apply_identity(found, work.cfg.harness.delivery)
    if branch and found.branch != branch:
        raise PolicyRefused(
            f"the MR's branch {branch} is not the case branch {found.branch}",
            hint="the harness pushes only its own case branches; a human owns that one",
        )
    return found


# -- task ---------------------------------------------------------------------------------------


def run_task(work: Work) -> dict[str, Any]:
    from harness_cli.delivery import outcome

    wt = worktree_for(work)
    _move(work, "in_progress", "planning")
    plan = _analyze(work, wt)
    auto = bool(work.args.get("auto"))
    if not auto and not work.args.get("plan_approved"):
        _set_plan_pending(work)
        return {
            "mode": "task",
            "state": "plan_waiting_for_operator",
            "worktree": str(wt.path),
            "message": outcome.plan_waiting(work.case.id, plan.draft_response),
        }
    job = "Implement this plan:\n" + "\n".join(f"- {a.description}" for a in plan.actions)
    change = change_push_and_mr(work, wt, "task", job)
    if not change.pushed or change.mr is None:
        # "a failed or no-op run returns the case to a state the operator can act on"
        _move(work, "failed", "dev-agent task: nothing delivered")
    return outcome.task_result(work, change)


def _analyze(work: Work, wt: worktrees.Worktree) -> CompletionReport:
    t = work.cfg.harness.investigation.model_copy(update={"max_iterations": ANALYZE_ROUNDS})
    history: list[Verdict] = []
    report: CompletionReport | None = None
    analysis = _read(work.case_dir / "ANALYSIS.md")
    task = _read(work.case_dir / "TASK.md")
    for n in range(1, ANALYZE_ROUNDS + 1):
        text = work.agent(
            "dev-agent-plan", "dev-agent-plan", wt, iteration=str(n),
            max_iterations=str(ANALYZE_ROUNDS), analysis=analysis, task=task,
            pinned=pinned_block(report),
        )  # fmt: skip
        found, verdict = evaluate_text(text, report, None, t, history=history)
        report = found or report
        history.append(verdict)
        decision = verdict.decision
        assert decision is not None
        if decision.action in ("review", "exit_complete") and report is not None:
            return report
        if decision.is_exit:
            raise PolicyRefused(
                f"planning stopped: {decision.reason}",
                hint="the case needs the operator; see the case thread",
            )
        work.notes = pending_guard_notes(verdict)
    raise PolicyRefused(f"no plan after {ANALYZE_ROUNDS} rounds")


# -- the shared tail: change → checks → commit → acceptance → push → MR --------------------------


def change_push_and_mr(
    work: Work, wt: worktrees.Worktree, mode: str, job: str, *, target: str | None = None
) -> Change:
    before = head_sha(wt.path)
    style = mr.compose_prompt_section(sops_dir(work.cfg))
    change = Change(mode=mode, changed=False)
    for _ in range(BUILD_LOOPS):
        text = work.agent("dev-agent", "dev-agent", wt, mode=mode, job=job, style=style)
        change.meta = _last_json(text) or change.meta
        _commit_with_style(work, wt, change.meta, before)
        change.record = acceptance.run_acceptance(
            wt.path, work.checks(), work.case_dir, base_sha=wt.base_sha,
            approved=check_guard.approved_digests(work.case_dir),
        )  # fmt: skip
        if change.record.passed:
            break
        job = _redo(work, wt, change.record)
    change.changed = head_sha(wt.path) != before
    change.commits = _subjects(wt, before)
    if not change.changed:
        event(log, "no_change_no_push", case_id=work.case.id, mode=mode)
        return change
    change.outcome = push.push_with_recovery(
        wt, runtime=work.runtime, outbound=work.out, cfg=work.cfg, case_id=work.case.id,
        case_dir=work.case_dir, task_text=job, target=target,
    )  # fmt: skip
    if change.pushed:
        change.commits = _subjects(wt, before)  # as pushed (the pre-push check may reword)
        change.mr = _submit(work, wt, change.meta, change.record)
    return change


def _redo(work: Work, wt: worktrees.Worktree, record: acceptance.AcceptanceRecord) -> str:
    failures = _check_failures(record)
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
        _move(work, "mr_open", "MR open")
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


# -- small helpers ------------------------------------------------------------------------------


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


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def _move(work: Work, status: str, note: str) -> None:
    with registry.update_case(work.case.id, work.cfg.harness.thresholds, note) as case:
        if status == "in_progress" and case.status == "mr_open":
            return
        if status == "failed" and case.status != "in_progress":
            return  # only a run that left the case in progress hands it back
        if case.status != status:
            case.move(status, by="dev-agent", note=note)


def _set_plan_pending(work: Work) -> None:
    with registry.update_case(work.case.id, work.cfg.harness.thresholds, "plan waiting") as c:
        c.plan_pending = True
