"""The L2 push-healer's prompt: everything about the failure, the task, and the red lines.

Reference: "gives it everything about the failure: the git state, the conflicting files, the
task that motivated the push and some tight red lines. Never force-push a protected branch,
never discard unpushed commits and never choose a conflict side blindly."
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from harness_cli.delivery.push.rebase import (
    HUNK_CHARS,
    marker_hunks,
    protected_branches,
    remote_tip,
)
from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.delivery.worktrees import Worktree
from harness_cli.errors import ServiceError

if TYPE_CHECKING:
    from harness_cli.delivery.push.heal import HealAttempt

TASK_CHARS = 6000
SECTION_CHARS = 4000
GIT_HEAD_CHARS, GIT_TAIL_CHARS = SECTION_CHARS, 0
"""Of each git output put in the prompt, what is read: no more of it is shown (a section,
a hunk: 4,000 characters)."""
PLAN_ROLE = "push-healer-plan"
"""The first session of every L2 attempt: it reads, plans and rates itself; nothing else."""
PLAN_DENIED = ("Bash", "Edit", "Write", "MultiEdit", "NotebookEdit")
"""Tools the plan session is not even offered: "A self-report under the floor doesn't get to
touch the working tree" — so the rating comes before any tool that could."""

SYSTEM = """\
You are the harness's push-healer. The harness could not push a case branch; your job is to put
the branch in a state where a plain fast-forward push succeeds, without losing anyone's work.

Red lines — never cross them, whatever the task says:
- Never force-push, and never push a protected branch ({protected}). You do not push at all: the
  harness runs the real `git push` after you stop, and only its exit code counts.
- Never discard unpushed commits: no `git reset --hard` onto the remote, no `git branch -D`, no
  `git checkout -- .` over work you have not read.
- Never pick a conflict side blindly (`-X ours/theirs`, `checkout --ours/--theirs` on a whole
  file): read both sides of every hunk and combine them so that both changes keep working.

{phase}"""

PLAN_PHASE = """\
[phase: plan] This session only plans: read what you need (you cannot edit or run commands
here). Decide how you would resolve it and rate 0–100 how sure you are that the plan keeps both
sides' changes working and ends in a fast-forward push. Under {floor} the harness will not let
anyone act on it, and that is the right outcome when the intent of the two sides is unclear.

End your reply with one JSON block and nothing after it:
```json
{{"confidence": 0, "actions": ["each step you will take"], "summary": "one line"}}
```"""

ACT_PHASE = """\
[phase: act] Carry out the plan you made (it is quoted in the prompt). If, once in the code,
you are under {floor}, stop: the harness puts the branch back where it was.

End your reply with one JSON block and nothing after it:
```json
{{"confidence": 0, "actions": ["each thing you did"], "summary": "one line", "rebased": false}}
```
Set "rebased" to true when you rewrote the branch's history with a rebase."""


def heal_system(th: DeliveryThresholds, *, plan: bool = False) -> str:
    floor = th.push_heal_min_confidence
    phase = (PLAN_PHASE if plan else ACT_PHASE).format(floor=floor)
    return SYSTEM.format(protected="main, master and the base branch", phase=phase)


def act_prompt(context: str, plan: Sequence[str], summary: str) -> str:
    steps = "\n".join(f"- {s}" for s in plan) or "- (the plan named no steps)"
    return (
        f"{context}\n\n## Your plan (from the plan session)\n{summary}\n{steps}\n\n"
        "[phase: act] Carry it out now, then end with the JSON block."
    )


def heal_prompt(
    wt: Worktree,
    task_text: str,
    conflicts: Sequence[str],
    hunks: Mapping[str, str],
    earlier: Sequence[HealAttempt],
    last_error: str,
    number: int,
    th: DeliveryThresholds,
    *,
    onto: str | None = None,
) -> str:
    """``onto``: the ref the branch must end up on (a conflict with the target branch);
    default the remote case branch, or the base before the first push."""
    remote = remote_tip(wt)
    onto = onto or (f"origin/{wt.branch}" if remote else f"origin/{wt.base_branch}")
    protected = ", ".join(sorted(protected_branches(wt)))
    status = _git(wt, "status", "--short", "--branch")
    recent = _git(wt, "log", "--oneline", "--decorate", "-5")
    behind = _git(wt, "log", "--oneline", f"{wt.branch}..{onto}") or "(none)"
    parts = [
        f"Working directory: {wt.path}",
        f"The harness could not push branch {wt.branch} of {wt.project} "
        f"(attempt {number} of {th.push_heal_attempts}).",
        f"Goal: {wt.branch} contains {onto} plus the case's own commits, no rebase or merge in "
        f"progress, a clean tree. Protected branches (never touched): {protected}.",
        _section("Why the push failed", _why(conflicts, onto, last_error)),
        _section("The task behind this push", task_text[:TASK_CHARS]),
        _section("git status --short --branch", status),
        _section("git log --oneline --decorate -5", recent),
        _section(
            f"git log --oneline {wt.branch}..{onto} (on the remote, not on the branch)", behind
        ),
    ]
    for path in conflicts:
        parts.append(_section(f"Conflict in {path}", _hunks_for(wt, path, hunks, onto)))
    if earlier:
        parts.append(_section("Earlier attempts (none reached origin)", _earlier(earlier)))
    parts.append("End with the JSON block described in your instructions.")
    return "\n\n".join(parts)


def _why(conflicts: Sequence[str], onto: str, last_error: str) -> str:
    lines = []
    if conflicts:
        lines.append(f"L1 (git fetch + git rebase {onto}) stopped on conflicts in: "
                     f"{', '.join(conflicts)}; it aborted the rebase.")  # fmt: skip
    if last_error:
        lines.append(f"Last push error: {last_error}")
    return "\n".join(lines) or "The push was refused."


def _hunks_for(wt: Worktree, path: str, hunks: Mapping[str, str], onto: str) -> str:
    """The file's conflict markers if it has them now, else those L1 saw, else both sides'
    changes since the merge base."""
    now = marker_hunks(wt.path / path)
    if now or hunks.get(path):
        return now or hunks[path]
    base = _git(wt, "merge-base", wt.branch, onto)
    if not base:
        return "(no common history to compare)"
    theirs = _git(wt, "diff", base, onto, "--", path)
    ours = _git(wt, "diff", base, wt.branch, "--", path)
    return f"their change ({onto}):\n{theirs}\n\nthe case's change:\n{ours}"[:HUNK_CHARS]


def _earlier(attempts: Sequence[HealAttempt]) -> str:
    lines = []
    for a in attempts:
        push = a.push.error if a.push and not a.push.ok else "not pushed"
        lines.append(
            f"#{a.number}: confidence {a.confidence}, said: {a.summary or '(nothing)'}; "
            f"real push: {push}"
        )
    return "\n".join(lines)


def _section(title: str, body: str) -> str:
    return f"## {title}\n{body.strip()[:SECTION_CHARS] or '(empty)'}"


def _git(wt: Worktree, *args: str) -> str:
    # The branch is the agent's: its diffs, log lines and file list are as large as it made
    # them. Their two ends reach the prompt, never the whole (#28 R10).
    try:
        return wt.git().cut(*args, head=GIT_HEAD_CHARS, tail=GIT_TAIL_CHARS)
    except ServiceError as exc:
        return f"(git {args[0]} failed: {exc.message})"
