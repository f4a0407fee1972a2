"""dev-agent: the hands-on work, in the case's own worktree, in three modes.

- ``task``: analyze (the gated skeleton, up to 8 rounds, producing the plan) → [the operator's
  OK unless --auto] → implement (one run; its build/test step looped up to 3 times against the
  harness's own acceptance run) → acceptance → push (L1/L2/L3) → MR.
- ``fix_ci``: the failed job's log → a fix → acceptance → push; a run that changed nothing
  pushes nothing (the reference's 80 no-op "fix CI" commits). A red merge status (conflict,
  need_rebase) runs the push recovery alone.
- ``address_review``: the unresolved discussions → changes → push → a reply that says "Done"
  only if that push exited 0.

The agent edits and commits; the harness runs the checks, pushes and talks to GitLab and
Slack. Nothing the model says about its own success is taken as success.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_cli.agents.runtime import RunRequest, Runtime
from harness_cli.bounds import bound
from harness_cli.config import Config
from harness_cli.delivery import acceptance, mr, push, worktrees
from harness_cli.delivery.commit import (
    commit_all,
    head_sha,
    outside_task_paths,
    styled_message,
)
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
    """No progress posts in the case thread (L3 escalations still go out)."""
    notes: list[str] = field(default_factory=list)
    status: RunStatus | None = None
    """The live status message in the case thread; delivery.run closes it (done/failed)."""

    @property
    def project(self) -> str:
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
            log,
            "dev_agent_run",
            case_id=self.case.id,
            role=role,
            stop=result.stop,
            turns=result.turns,
            cost_usd=result.cost_usd,
            input_tokens=result.usage.input,
            output_tokens=result.usage.output,
            cache_creation_tokens=result.usage.cache_creation,
            cache_read_tokens=result.usage.cache_read,
            reverted=result.reverted,
        )
        if result.stop in ("error", "timeout") and not result.text:
            raise ServiceError(f"the {role} run failed: {result.error or result.stop}")
        return result.text


def worktree_for(work: Work) -> worktrees.Worktree:
    found = worktrees.for_case(work.case.id)
    if found is not None and found.path.exists():
        return found
    info = work.gitlab.project(work.project)
    return worktrees.create(
        work.case.id,
        str(info["http_url_to_repo"]),
        work.project,
        str(info.get("default_branch") or "main"),
    )


# -- task ---------------------------------------------------------------------------------------


def run_task(work: Work) -> dict[str, Any]:
    wt = worktree_for(work)
    _move(work, "in_progress", "planning")
    plan = _analyze(work, wt)
    auto = bool(work.args.get("auto"))
    if not auto and not work.args.get("plan_approved"):
        _post(
            work,
            "The plan for the change is ready; reply `admin: task "
            f"{work.case.id}` to let me implement it:\n{plan.draft_response}",
        )
        _set_plan_pending(work)
        return {"mode": "task", "state": "plan_waiting_for_operator", "worktree": str(wt.path)}
    job = "Implement this plan:\n" + "\n".join(f"- {a.description}" for a in plan.actions)
    return _change_push_and_mr(work, wt, "task", job)


def _analyze(work: Work, wt: worktrees.Worktree) -> CompletionReport:
    t = work.cfg.harness.investigation.model_copy(update={"max_iterations": ANALYZE_ROUNDS})
    history: list[Verdict] = []
    report: CompletionReport | None = None
    analysis = _read(work.case_dir / "ANALYSIS.md")
    task = _read(work.case_dir / "TASK.md")
    for n in range(1, ANALYZE_ROUNDS + 1):
        text = work.agent(
            "dev-agent-plan",
            "dev-agent-plan",
            wt,
            iteration=str(n),
            max_iterations=str(ANALYZE_ROUNDS),
            analysis=analysis,
            task=task,
            pinned=pinned_block(report),
        )
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


# -- fix_ci and address_review ------------------------------------------------------------------


def run_fix_ci(work: Work) -> dict[str, Any]:
    wt = worktree_for(work)
    if work.args.get("merge_status"):
        outcome = _push(work, wt, f"bring the branch up to date ({work.args['merge_status']})")
        return {"mode": "fix_ci", "state": "recovered" if outcome.pushed else "escalated"}
    trace_file = Path(str(work.args.get("trace_file", "")))
    trace = bound(
        _read(trace_file),
        work.cfg.harness.inputs.job_trace_chars,
        what="the job log",
        where=str(trace_file),
        keep="tail",
    )
    job = (
        "The MR's pipeline failed. The failed job's log ends with:\n```\n"
        + trace
        + "\n```\nFind the cause and fix it."
    )
    return _change_push_and_mr(work, wt, "fix_ci", job)


def run_address_review(work: Work) -> dict[str, Any]:
    wt = worktree_for(work)
    project, iid = str(work.args["mr"]).rsplit("!", 1)
    wanted = set(map(str, work.args.get("discussions", [])))
    threads = [
        d for d in work.gitlab.discussions(project, int(iid)) if not wanted or d.id in wanted
    ]
    comments = "\n\n".join(
        f"Discussion {d.id}:\n"
        + "\n".join(f"{n.author}: {n.body}" for n in d.notes if not n.system)
        for d in threads
    )
    job = f"Reviewers left these comments on the MR:\n{comments}\nAddress each one."
    result = _change_push_and_mr(work, wt, "address_review", job, allow_no_change=True)
    pushed_ok = result.get("push_exit_code") == 0
    for d in threads:
        body = result.get("reply") or "Thanks, looking into it."
        text = mr.reply_gate(
            0 if pushed_ok or not result.get("changed") else 1,
            f"Done, updated. {body}" if result.get("changed") else body,
        )
        if text is not None:
            work.gitlab.reply(project, int(iid), d.id, text)
    return result


# -- the shared tail: change → checks → commit → acceptance → push → MR --------------------------


def _change_push_and_mr(
    work: Work, wt: worktrees.Worktree, mode: str, job: str, *, allow_no_change: bool = False
) -> dict[str, Any]:
    before = head_sha(wt.path)
    style = mr.compose_prompt_section(sops_dir(work.cfg))
    meta: dict[str, Any] = {}
    record = None
    for _ in range(BUILD_LOOPS):
        meta = (
            _last_json(work.agent("dev-agent", "dev-agent", wt, mode=mode, job=job, style=style))
            or meta
        )
        _commit_with_style(work, wt, meta)
        record = acceptance.run_acceptance(wt.path, work.checks(), work.case_dir)
        if record.passed:
            break
        job = (
            "The harness ran the required checks and they failed:\n"
            + _check_failures(record)
            + "\nFix the code until they pass."
        )
    changed = head_sha(wt.path) != before
    if not changed:
        event(log, "no_change_no_push", case_id=work.case.id, mode=mode)
        if not allow_no_change:
            _post(work, f"{mode}: the agent changed nothing, so nothing was pushed.")
        return {"mode": mode, "changed": False, "pushed": False, "reply": meta.get("reply", "")}
    outcome = _push(work, wt, job)
    result: dict[str, Any] = {
        "mode": mode,
        "changed": True,
        "pushed": outcome.pushed,
        "push_exit_code": 0 if outcome.pushed else 1,
        "acceptance_passed": bool(record and record.passed),
        "reply": meta.get("reply", ""),
    }
    if not outcome.pushed:
        return result
    submitted = _submit(work, wt, meta, record)
    result["mr"] = submitted
    return result


def _commit_with_style(work: Work, wt: worktrees.Worktree, meta: dict[str, Any]) -> None:
    def resend(notes: list[str]) -> dict[str, Any]:
        work.notes = notes
        return _resend(work, wt, "commit message")

    commit_all(wt.path, styled_message(meta, resend, STYLE_RETRIES))
    left_out = outside_task_paths(wt.path)
    if left_out:  # #21 p2: new files outside the task's paths need the operator's OK
        _post(
            work,
            f"Not committed (outside the task's paths, or named like a secret): "
            f"{', '.join(left_out[:20])}. They stay in `{wt.path}`; commit them by hand if "
            "they belong in the change.",
        )


def _submit(
    work: Work,
    wt: worktrees.Worktree,
    meta: dict[str, Any],
    record: acceptance.AcceptanceRecord | None,
) -> dict[str, Any]:
    for _ in range(STYLE_RETRIES + 1):
        try:
            done = mr.submit_mr(
                work.gitlab,
                project=work.project,
                source_branch=wt.branch,
                target_branch=wt.base_branch,
                title=str(meta.get("mr_title") or work.case.title),
                description=str(meta.get("mr_description") or ""),
                commit_messages=[str(meta.get("commit_message") or "")],
                case_id=work.case.id,
                case_dir=work.case_dir,
                acceptance=record,
                head_sha=head_sha(wt.path),
                thresholds=work.cfg.harness.thresholds,
            )
        except mr.StyleRejected as exc:
            work.notes = [f"[STYLE] {v.render()}" for v in exc.violations]
            meta.update(_resend(work, wt, "MR description"))
            continue
        _move(work, "mr_open", "MR open")
        _post(
            work,
            f"MR {'opened' if not done.adopted else 'updated'}: {done.web_url}"
            + ("" if done.ready else " (draft: acceptance has not passed on its head)"),
        )
        return {"web_url": done.web_url, "iid": done.iid, "ready": done.ready}
    raise PolicyRefused(
        "the MR description kept breaking the style SOP",
        hint="the branch is pushed; no MR was opened",
    )


def _push(work: Work, wt: worktrees.Worktree, task_text: str) -> push.PushOutcome:
    return push.push_with_recovery(
        wt,
        runtime=work.runtime,
        outbound=work.out,
        cfg=work.cfg,
        case_id=work.case.id,
        case_dir=work.case_dir,
        task_text=task_text,
    )


# -- small helpers ------------------------------------------------------------------------------


def _resend(work: Work, wt: worktrees.Worktree, what: str) -> dict[str, Any]:
    """A style violation goes back to the agent (the guard notes say which), never out."""
    text = work.agent(
        "dev-agent",
        "dev-agent",
        wt,
        mode=what,
        job=f"The {what} was sent back. Give only the JSON block again, fixed.",
        style=mr.compose_prompt_section(sops_dir(work.cfg)),
    )
    return _last_json(text)


def _check_failures(record: acceptance.AcceptanceRecord) -> str:
    return "\n".join(
        f"$ {c.command}  (exit {c.exit_code})\n{c.output_tail[-1500:]}"
        for c in record.checks
        if c.exit_code != 0
    )


def _last_json(text: str) -> dict[str, Any]:
    blocks = [
        b
        for b in json_objects(text)
        if "commit_message" in b or "mr_description" in b or "reply" in b
    ]
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
        if case.status != status:
            case.move(status, by="dev-agent", note=note)


def _set_plan_pending(work: Work) -> None:
    with registry.update_case(work.case.id, work.cfg.harness.thresholds, "plan waiting") as c:
        c.plan_pending = True


def _post(work: Work, text: str) -> None:
    if work.quiet:
        return
    from harness_cli.state import files

    thread = next(
        (
            t
            for t in files.oncall_thread_map().read().for_case(work.case.id)
            if t.role == "case_thread"
        ),
        None,
    ) or next(
        (
            t
            for t in files.task_thread_map().read().for_case(work.case.id)
            if t.role == "case_thread"
        ),
        None,
    )
    work.out.post(
        work.cfg.harness.operator.self_dm_channel,
        text,
        thread_ts=thread.thread_ts if thread else None,
    )
