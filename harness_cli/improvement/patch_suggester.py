"""patch_suggester: the surviving gaps become one MR against the harness's own repository.

Reference (Loop 1): "finalize_case starts patch_suggester in a dedicated worktree and produces
one PR against the harness's own codebase, touching code files, prompt templates or SOP
sections. Merging it takes a human. Writing it doesn't."

The harness repo is handled like any project repo, with the delivery pieces dev-agent uses:
a worktree from the repo's mirror (``worktrees.create``), the model editing files there, the
harness committing under a linted message, the harness's own acceptance run
(``self_repo_checks``, fail-closed), the three-layer push, then ``mr.submit_mr`` (style linter
gate, 409 adoption, registration in monitored-mrs.json so mr-monitor's loop — pr-ci-fixer —
watches its CI). The agent's own commits are squashed into the harness's commit, and a change
outside ``self_repo_paths`` is refused before anything is pushed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness_cli.config import Config
from harness_cli.delivery import acceptance, mr, worktrees
from harness_cli.delivery.commit import commit_all, head_sha, styled_message
from harness_cli.delivery.push import recovery as push
from harness_cli.errors import PolicyRefused, ServiceError
from harness_cli.improvement.gap_patterns import ClusterRecord
from harness_cli.improvement.gap_reports import GapReport
from harness_cli.improvement.thresholds import ImprovementThresholds
from harness_cli.logs import event
from harness_cli.loop.guard_notes import render_guard_notes
from harness_cli.loop.jsonblocks import json_objects
from harness_cli.loop.prompts import render, sops_dir
from harness_cli.outbox.outbound import Outbound
from harness_cli.services.gitlab import GitLab
from harness_cli.services.runtime import RunRequest, Runtime
from harness_cli.workspace.case import Case

log = logging.getLogger("harness.improvement.patch")

ROLE = "patch-suggester"
STYLE_RETRIES = 2
"""A style violation goes back to the agent, never out; after this many tries the run fails."""
BODY_CHARS = 2000


class MrFigures(Protocol):
    """The eval figures an improvement MR states (``eval.before_after.BeforeAfter``)."""

    def insert_into(self, description: str) -> str: ...


MeasureEval = Callable[[list[str], int, Path, str], tuple[MrFigures, str]]
"""The eval suites on the prompts and SOPs before and after a worktree's change (#18 point 4):
(suites, runs, worktree, its base commit) → the figures, and the baseline file it wrote into the
worktree for the MR's pipeline to gate on. The edge hands ``eval.before_after.measure_for_mr``
down: the eval is a tool beside the edge, which no layer imports."""


@dataclass
class PatchJob:
    cfg: Config
    th: ImprovementThresholds
    case: Case
    case_dir: Path
    gaps: list[GapReport]
    clusters: list[ClusterRecord]
    runtime: Runtime
    gitlab: GitLab
    out: Outbound
    measure_eval: MeasureEval
    notes: list[str] = field(default_factory=list)


@dataclass
class Suggestion:
    web_url: str
    iid: int
    ready: bool
    """Not a draft: the acceptance run passed on exactly the pushed head."""
    adopted: bool
    branch: str
    changed_paths: list[str]


def improvement_worktree(
    cfg: Config, th: ImprovementThresholds, case_id: str, info: dict[str, Any]
) -> worktrees.Worktree:
    """The case's worktree of the harness repo, keyed by :func:`worktrees.worktree_key` (the
    case id, or ``<case>.improve`` while the ticket's own worktree of another repo exists), so
    mr-monitor's fix_ci for the improvement MR finds this one and never the ticket's."""
    return worktrees.create(
        worktrees.worktree_key(case_id, th.self_repo),
        str(info["http_url_to_repo"]),
        th.self_repo,
        str(info.get("default_branch") or "main"),
        thresholds=cfg.harness.delivery,
        case=case_id,
    )


def suggest(job: PatchJob) -> Suggestion:
    info = job.gitlab.project(job.th.self_repo)
    wt = improvement_worktree(job.cfg, job.th, job.case.id, info)
    style = mr.compose_prompt_section(sops_dir(job.cfg))
    task = (
        "Make the changes to the harness that the gaps below call for, in the files they "
        "name where that is right. Keep the change small and reviewable."
    )
    meta: dict[str, Any] = {}
    record: acceptance.AcceptanceRecord | None = None
    for round_no in range(job.th.patch_build_loops):
        start = head_sha(wt.path)
        meta = _last_json(_agent(job, wt, task, style)) or meta
        changed = _changed_paths(wt)
        fresh = head_sha(wt.path) != start or bool(wt.git().status_porcelain().strip())
        try:
            _refuse_outside(job.th, changed)
            if not changed:
                raise PolicyRefused(
                    "patch_suggester changed nothing in the harness repo",
                    hint="nothing was pushed; the gaps stay in the case folder",
                )
            if fresh:
                _commit(job, wt, meta, start, style)
        except PolicyRefused:
            _discard(wt, start)  # a retry starts from the last commit the harness made
            raise
        if not fresh and round_no and record is not None:
            break  # the agent had nothing more to change: the last record stands
        record = acceptance.run_acceptance(
            wt.path, job.th.self_repo_checks, job.case_dir / "finalize"
        )
        if record.passed:
            break
        task = (
            "The harness ran the required checks and they failed:\n"
            + "\n".join(
                f"$ {c.command}  (exit {c.exit_code})\n{c.output_tail[-1500:]}"
                for c in record.checks
                if c.exit_code != 0
            )
            + "\nFix the change until they pass."
        )
    figures = _eval_figures(job, wt)  # measured, and its baseline committed, before the push
    outcome = push.push_with_recovery(
        wt,
        runtime=job.runtime,
        outbound=job.out,
        forge=job.gitlab,
        cfg=job.cfg,
        case_id=job.case.id,
        case_dir=job.case_dir,
        task_text=f"improvement MR of case {job.case.id} on {job.th.self_repo}",
    )
    if not outcome.pushed:
        raise ServiceError(
            f"the improvement branch {wt.branch} could not be pushed: {outcome.last_error}",
            hint="the operator was told (L3); the worktree keeps the commit",
        )
    return _submit(job, wt, meta, record, style, figures=figures)


def _eval_figures(job: PatchJob, wt: worktrees.Worktree) -> MrFigures | None:
    """The eval suite on the prompts and SOPs before and after this change (#18 point 4)."""
    if not job.th.eval_suites:
        return None

    # the MR's pipeline gates on the before run, which the measure wrote into the worktree
    suites = list(job.th.eval_suites)
    figures, baseline = job.measure_eval(suites, job.th.eval_runs, wt.path, wt.base_sha)
    wt.git().run("add", "--", baseline)
    commit_all(wt.path, f"Eval baseline of case {job.case.id} for the pipeline's eval step")
    return figures


def _agent(job: PatchJob, wt: worktrees.Worktree, task: str, style: str) -> str:
    prompt = render(
        job.cfg,
        ROLE,
        case_id=job.case.id,
        project=job.case.project,
        self_repo=job.th.self_repo,
        worktree=str(wt.path),
        branch=wt.branch,
        guard_notes=render_guard_notes(job.notes),
        job=task,
        gaps=render_gaps(job.gaps),
        clusters=render_clusters(job.clusters),
        allowed_paths=", ".join(job.th.self_repo_paths),
        checks="; ".join(job.th.self_repo_checks),
        style=style,
    )
    job.notes = []
    result = job.runtime.run(
        RunRequest(
            role=ROLE,
            prompt=prompt,
            workdir=wt.path,
            allowed_root=wt.path,
            protect=(job.case_dir,),
            max_turns=job.th.patch_max_turns,
            timeout_s=job.th.patch_timeout_seconds,
        )
    )
    event(
        log, "patch_suggester_run", case_id=job.case.id, stop=result.stop, turns=result.turns,
        cost_usd=result.cost_usd, reverted=result.reverted,
    )  # fmt: skip
    if result.stop in ("error", "timeout") and not result.text:
        raise ServiceError(f"the patch-suggester run failed: {result.error or result.stop}")
    return result.text


def render_gaps(gaps: list[GapReport]) -> str:
    if not gaps:
        return "(none of this case's gap reports survived the filters)"
    parts = []
    for n, gap in enumerate(gaps, 1):
        confidence = f"{gap.confidence:.2f}" if gap.confidence is not None else "?"
        lines = [f"### Gap {n}: {gap.path.name} ({gap.category}, confidence {confidence})"]
        if gap.target_file:
            lines.append(f"Target: {gap.target_file}")
        if gap.proposed_change:
            lines.append(f"Proposed change: {gap.proposed_change}")
        if gap.evidence:
            lines.append(f"Evidence:\n{gap.evidence}")
        if gap.body:
            lines.append(gap.body[:BODY_CHARS])
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def render_clusters(clusters: list[ClusterRecord]) -> str:
    if not clusters:
        return "(none handed over)"
    return "\n\n".join(
        f"### {c.id}: {c.label} — {c.size} reports in {len(c.cases)} cases\n"
        + (f"Proposed fix: {c.proposed_fix}\n" if c.proposed_fix else "")
        + "\n".join(f"> {e.excerpt}" for e in c.examples)
        for c in clusters
    )


def _changed_paths(wt: worktrees.Worktree) -> list[str]:
    """Everything that differs from the branch's base: committed, staged, modified, untracked."""
    git = wt.git()
    diff = git.run("diff", "--name-only", "-z", "--no-renames", wt.base_sha).split("\0")
    untracked = git.run("ls-files", "--others", "--exclude-standard", "-z").split("\0")
    return sorted({p for p in diff + untracked if p})


def _discard(wt: worktrees.Worktree, start: str) -> None:
    """Drop what this round left in the worktree (edits, untracked files, the agent's own
    commits), back to ``start``."""
    git = wt.git()
    git.run("reset", "-q", "--hard", start)
    git.run("clean", "-q", "-f", "-d")


def _refuse_outside(th: ImprovementThresholds, changed: list[str]) -> None:
    outside = [p for p in changed if not any(p.startswith(a) for a in th.self_repo_paths)]
    if outside:
        raise PolicyRefused(
            f"the improvement touches {', '.join(outside[:5])}, outside "
            f"{', '.join(th.self_repo_paths)}",
            hint="nothing was pushed; widen improvement.self_repo_paths if that is intended",
        )


def _commit(
    job: PatchJob, wt: worktrees.Worktree, meta: dict[str, Any], start: str, style: str
) -> None:
    """The harness's commit of this round: the agent's own commits are squashed into it, under
    a message that passed the style linter."""

    def resend(notes: list[str]) -> dict[str, Any]:
        job.notes = notes
        return _resend(job, wt, "commit message", style)

    message = styled_message(meta, resend, STYLE_RETRIES)
    if head_sha(wt.path) != start:
        wt.git().run("reset", "-q", "--soft", start)
    commit_all(wt.path, message)


def _submit(
    job: PatchJob,
    wt: worktrees.Worktree,
    meta: dict[str, Any],
    record: acceptance.AcceptanceRecord | None,
    style: str,
    *,
    figures: MrFigures | None = None,
) -> Suggestion:
    messages = [
        m.strip()
        for m in wt.git().run("log", "--format=%B%x00", f"{wt.base_sha}..HEAD").split("\0")
        if m.strip()
    ]
    for _ in range(STYLE_RETRIES + 1):
        try:
            done = mr.submit_mr(
                job.gitlab,
                project=job.th.self_repo,
                source_branch=wt.branch,
                target_branch=wt.base_branch,
                title=str(meta.get("mr_title") or f"Apply the lessons of case {job.case.id}"),
                description=figures.insert_into(str(meta.get("mr_description") or ""))
                if figures is not None
                else str(meta.get("mr_description") or ""),
                commit_messages=messages,
                case_id=job.case.id,
                case_dir=job.case_dir,
                acceptance=record,
                head_sha=head_sha(wt.path),
                thresholds=job.cfg.harness.thresholds,
            )
        except mr.StyleRejected as exc:
            job.notes = [f"[STYLE] {v.render()}" for v in exc.violations]
            meta.update(_resend(job, wt, "MR description", style))
            continue
        return Suggestion(
            web_url=done.web_url,
            iid=done.iid,
            ready=done.ready,
            adopted=done.adopted,
            branch=wt.branch,
            changed_paths=_changed_paths(wt),
        )
    raise PolicyRefused(
        "the MR description kept breaking the style SOP",
        hint=f"the branch {wt.branch} is pushed; no MR was opened",
    )


def _resend(job: PatchJob, wt: worktrees.Worktree, what: str, style: str) -> dict[str, Any]:
    text = _agent(
        job, wt, f"The {what} was sent back. Give only the JSON block again, fixed.", style
    )
    return _last_json(text)


def _last_json(text: str) -> dict[str, Any]:
    blocks = [b for b in json_objects(text) if "commit_message" in b or "mr_description" in b]
    return blocks[-1] if blocks else {}
