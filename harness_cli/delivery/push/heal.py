"""L2 of push recovery: a constrained agent session, then the real push, at most N times.

Reference ("Recovering from single operations"): "When L1 fails to fix the situation, the
harness starts a constrained Claude session (_self_heal_push_loop) and gives it everything about
the failure: the git state, the conflicting files, the task that motivated the push and some
tight red lines." Three constraints, all enforced here and not by the prompt alone:

1. Bounded retry — ``push_heal_attempts`` sessions of ``push_heal_turn_timeout_s`` each; after
   every one the harness runs the real push, and "an exit code of 0 from git push is the only
   ground truth".
2. The confidence gate — a self-report under ``push_heal_min_confidence`` is a bail: nothing is
   pushed and L2 ends.
3. Truthfulness — success means a commit reached origin. The model cannot push (the worktree's
   pushurl is a trap), cannot make the harness force a protected branch (``real_push`` refuses),
   and cannot make it push a branch that lost the case's unpushed commits (checked against the
   tip saved, also as a backup ref, before L2 began).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from harness_cli.delivery.push import heal_prompt as prompts
from harness_cli.delivery.push.rebase import PushResult, fetch, real_push, remote_tip
from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.delivery.worktrees import Worktree
from harness_cli.errors import HarnessError, ServiceError
from harness_cli.logs import event
from harness_cli.services.runtime import RunEvent, RunRequest, Runtime

log = logging.getLogger("harness.delivery.heal")

ROLE = "push-healer"
BACKUP_REF = "refs/harness/backup/{branch}"
"""The case branch's tip before L2 touched it: whatever the model does, it can be restored."""
ATTEMPT_REF = "refs/harness/attempt/{branch}/{number}"


class HealReport(BaseModel):
    """The JSON block the model must end with."""

    confidence: int = Field(ge=0, le=100)
    actions: list[str] = Field(default_factory=list)
    summary: str = ""
    rebased: bool = False
    """The model rewrote the branch's history (a rebase): only then may the harness try
    ``--force-with-lease`` on the case's own branch."""

    def says_rebased(self) -> bool:
        return self.rebased or any("rebase" in a.lower() for a in self.actions)


class HealAttempt(BaseModel):
    number: int
    confidence: int | None = None
    """None: the model ended without a readable JSON report."""
    actions: list[str] = Field(default_factory=list)
    summary: str = ""
    tool_calls: list[str] = Field(default_factory=list)
    """What the model actually ran, from the runtime's tool events."""
    stop: str = ""
    runtime_error: str | None = None
    seconds: float = 0.0
    bailed: bool = False
    branch_before: str | None = None
    branch_after: str | None = None
    plan_confidence: int | None = None
    """The plan session's rating, given before anything was touched."""
    plan: list[str] = Field(default_factory=list)
    status_after: str = ""
    """``git status --short --branch`` when the acting session ended."""
    restored: bool = False
    """The branch was put back to the saved head after this attempt."""
    kept_at: str = ""
    """Where what the attempt left is kept (a ref), when it was restored."""
    push: PushResult | None = None
    """The harness's real push after this attempt (None: not pushed — a bail or a refusal)."""
    note: str = ""


class HealResult(BaseModel):
    ok: bool
    """A real push exited 0."""
    bailed: bool = False
    attempts: list[HealAttempt] = Field(default_factory=list)
    pushed_sha: str | None = None
    backup_ref: str = ""
    backup_sha: str | None = None
    last_error: str = ""


def parse_report(text: str) -> HealReport | None:
    """The last JSON object in ``text`` that carries ``confidence`` (fenced or bare)."""
    decoder = json.JSONDecoder()
    index = text.rfind("{")
    while index != -1:
        try:
            value, _ = decoder.raw_decode(text[index:])
        except ValueError:
            value = None
        if isinstance(value, dict) and "confidence" in value:
            try:
                return HealReport.model_validate(_coerce(value))
            except ValueError:
                return None
        index = text.rfind("{", 0, index)
    return None


def _coerce(value: dict[str, Any]) -> dict[str, Any]:
    actions = value.get("actions")
    confidence = value.get("confidence")
    return {
        "confidence": max(0, min(100, int(confidence)))
        if isinstance(confidence, int | float)
        else confidence,
        "actions": [str(a) for a in actions] if isinstance(actions, list) else [],
        "summary": str(value.get("summary", "")),
        "rebased": bool(value.get("rebased", False)),
    }


def self_heal_push_loop(
    wt: Worktree,
    runtime: Runtime,
    task_text: str,
    conflicts: Sequence[str],
    *,
    hunks: Mapping[str, str] | None = None,
    last_error: str = "",
    thresholds: DeliveryThresholds | None = None,
    on_event: Callable[[RunEvent], None] | None = None,
    goal: Callable[[str], str | None] | None = None,
    onto: str | None = None,
) -> HealResult:
    """L2: up to ``push_heal_attempts`` attempts, each a read-only plan session, then (only at
    or above the confidence floor) an acting session, then the harness's own push; the first
    push that exits 0 (and meets ``goal``: a reason string when the pushed sha is no success)
    ends it, and so does a bail. A failed attempt leaves the branch at the saved head."""
    th = thresholds or DeliveryThresholds()
    git = wt.git()
    start_tip = git.head_sha(f"refs/heads/{wt.branch}")
    backup = BACKUP_REF.format(branch=wt.branch)
    if start_tip is not None:
        git.run("update-ref", backup, start_tip)
    had_unpushed = start_tip is not None and not _contains(wt, remote_tip(wt), start_tip)
    result = HealResult(ok=False, backup_ref=backup, backup_sha=start_tip, last_error=last_error)
    for number in range(1, th.push_heal_attempts + 1):
        attempt = HealAttempt(number=number, branch_before=git.head_sha(f"refs/heads/{wt.branch}"))
        attempt.note = _fetch_note(wt)
        result.attempts.append(attempt)
        context = prompts.heal_prompt(
            wt, task_text, conflicts, hunks or {}, result.attempts[:-1], result.last_error,
            number, th, onto=onto,
        )  # fmt: skip
        started, plan = _session(runtime, wt, th, prompts.PLAN_ROLE, context, attempt, on_event)
        if not started:  # no session at all (no CLI, no API): the operator's turn
            result.last_error = _join(result.last_error, f"L2 could not start: {attempt.note}")
            break
        # A plan with no readable confidence is a bail: the gate fails closed.
        plan = plan or HealReport(confidence=0, summary="no readable plan")
        attempt.plan_confidence, attempt.plan = plan.confidence, plan.actions
        attempt.summary = plan.summary
        if _touched(wt, attempt):  # the plan session may not change anything
            _restore(wt, start_tip, attempt, "the plan session changed the tree")
        if plan.confidence < th.push_heal_min_confidence:
            attempt.confidence = plan.confidence
            _bail(result, attempt, f"plan confidence {plan.confidence} under the floor")
            break
        act_prompt = prompts.act_prompt(context, plan.actions, plan.summary)
        _, report = _session(runtime, wt, th, ROLE, act_prompt, attempt, on_event)
        attempt.branch_after = git.head_sha(f"refs/heads/{wt.branch}")
        attempt.status_after = _status(wt)
        # No readable report after acting: the real push still decides, as for any attempt.
        if report is not None:
            attempt.confidence, attempt.actions = report.confidence, report.actions
            attempt.summary = report.summary or attempt.summary
        if report is not None and report.confidence < th.push_heal_min_confidence:
            _restore(wt, start_tip, attempt, "bailed after acting; branch restored")
            _bail(result, attempt, "bailed under the confidence floor")
            break
        push = _push_after(wt, attempt, report, start_tip if had_unpushed else None)
        attempt.push = push
        missed = goal(push.sha or "") if push.ok and goal is not None else None
        event(log, "push_l2_attempt", branch=wt.branch, attempt=number, pushed=push.ok)
        if push.ok and missed is None:
            result.ok, result.pushed_sha = True, push.sha
            _settle(wt)
            return result
        result.last_error = missed or push.error
        _restore(wt, start_tip, attempt, "attempt failed; branch restored")
        if push.refused and push.error.startswith("refused: commit"):
            break  # the style SOP: no further session can push it either
    return result


def _session(
    runtime: Runtime,
    wt: Worktree,
    th: DeliveryThresholds,
    role: str,
    prompt: str,
    attempt: HealAttempt,
    on_event: Callable[[RunEvent], None] | None,
) -> tuple[bool, HealReport | None]:
    """One model session: (it ran, its report when readable)."""
    plan = role == prompts.PLAN_ROLE
    request = RunRequest(
        role=role,
        prompt=prompt,
        system=prompts.heal_system(th, plan=plan),
        workdir=wt.path,
        allowed_root=wt.path,
        disallowed_tools=prompts.PLAN_DENIED if plan else (),
        max_turns=th.push_heal_max_turns,
        timeout_s=th.push_heal_turn_timeout_s,
        on_event=on_event,
    )
    began = time.monotonic()
    try:
        run = runtime.run(request)
    except HarnessError as exc:
        attempt.stop, attempt.runtime_error = "error", exc.line()
        attempt.note = _join(attempt.note, exc.message)
        return False, None
    attempt.seconds = round(attempt.seconds + time.monotonic() - began, 3)
    attempt.stop, attempt.runtime_error = run.stop, run.error
    attempt.tool_calls += [
        _describe_call(e.name, e.input).replace(str(wt.path), ".") for e in run.tool_events
    ]
    return True, parse_report(run.text)


def _bail(result: HealResult, attempt: HealAttempt, why: str) -> None:
    attempt.bailed = result.bailed = True
    attempt.note = _join(attempt.note, why)
    event(log, "push_l2_bail", logging.WARNING, attempt=attempt.number, why=why)


def _touched(wt: Worktree, attempt: HealAttempt) -> bool:
    git = wt.git()
    moved = git.head_sha(f"refs/heads/{wt.branch}") != attempt.branch_before
    return moved or bool(git.status_porcelain().strip()) or git.current_branch() != wt.branch


def _restore(wt: Worktree, tip: str | None, attempt: HealAttempt, why: str) -> None:
    """Back to the saved head: no rebase or merge in progress, the branch checked out at
    ``tip``, a clean tree. What the attempt left is kept at an attempt ref for the trail."""
    git = wt.git()
    at_tip = git.head_sha(f"refs/heads/{wt.branch}") == tip
    if tip is None or (at_tip and not _touched(wt, attempt)):
        return
    left = git.head_sha("HEAD")
    if left is not None and left != tip:
        ref = ATTEMPT_REF.format(branch=wt.branch, number=attempt.number)
        git.run("update-ref", ref, left)
        attempt.kept_at = ref
    _settle(wt)
    git.run("checkout", "-q", "-f", wt.branch)
    git.run("reset", "-q", "--hard", tip)
    git.run("clean", "-q", "-f", "-d")
    attempt.restored = True
    attempt.note = _join(attempt.note, why)


def _status(wt: Worktree) -> str:
    try:
        return wt.git().run("status", "--short", "--branch")
    except ServiceError as exc:
        return f"(git status failed: {exc.message})"


def _push_after(
    wt: Worktree, attempt: HealAttempt, report: HealReport | None, unpushed_tip: str | None
) -> PushResult:
    """The real push after an attempt, plain first; ``--force-with-lease`` only when the plain
    one was refused as non-fast-forward, the model says it rebased, and no commit someone else
    put on the remote branch would be lost."""
    git = wt.git()
    tip = git.head_sha(f"refs/heads/{wt.branch}")
    remote = remote_tip(wt)
    if unpushed_tip is not None and tip is not None and _contains(wt, remote, tip):
        error = (
            f"refused: {wt.branch} no longer holds the case's unpushed commits "
            f"(they are kept at {BACKUP_REF.format(branch=wt.branch)} = {unpushed_tip[:12]})"
        )
        return PushResult(ok=False, branch=wt.branch, sha=tip, refused=True, error=error)
    push = real_push(wt)
    if push.ok or not push.rejected or report is None or not report.says_rebased():
        return push
    if remote is None or git.rebase_in_progress() or git.merge_in_progress():
        attempt.note = _join(attempt.note, "no force: a rebase or merge is still in progress")
        return push
    lost = _remote_commits_missing(wt, remote, attempt.branch_before)
    if lost:
        attempt.note = _join(attempt.note, f"no force: {len(lost)} remote commit(s) would be lost")
        return push
    return real_push(wt, lease=remote)


def _remote_commits_missing(wt: Worktree, remote: str, before: str | None) -> list[str]:
    """Commits on the remote branch that the case did not have before this attempt and that
    the branch now lacks (by patch identity, so a rebased copy counts as kept)."""
    args = ["cherry", f"refs/heads/{wt.branch}", remote]
    if before is not None:
        args.append(before)
    out = wt.git().run(*args)
    return [line[2:] for line in out.splitlines() if line.startswith("+")]


def _contains(wt: Worktree, outer: str | None, inner: str) -> bool:
    return outer is not None and wt.git().is_ancestor(inner, outer)


def _settle(wt: Worktree) -> None:
    """After a successful push, a rebase the model left half done is not part of the branch
    (the branch ref is what was pushed): abort it so the worktree is on its branch again."""
    git = wt.git()
    if git.rebase_in_progress():
        git.rebase_abort()
    elif git.merge_in_progress():
        git.merge_abort()


def _fetch_note(wt: Worktree) -> str:
    try:
        fetch(wt)
    except ServiceError as exc:
        return f"fetch before the attempt failed: {exc.message}"
    return ""


def _describe_call(name: str, args: Mapping[str, Any]) -> str:
    detail = args.get("command") or args.get("file_path") or args.get("pattern") or ""
    return f"{name}: {str(detail)[:300]}"


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
