"""L3 of push recovery: one DM to the operator with the whole L2 trail.

Reference: "If L2 bailed on low confidence or used up its attempts, the harness sends the
operator a DM with the whole L2 trail, meaning each attempt, each action Claude took, each
confidence rating it gave and the closing git status. The operator starts from a fully
instrumented state and not from 'something went wrong.'"
"""

from __future__ import annotations

import logging
from pathlib import Path

from harness_cli.config import Config
from harness_cli.delivery.push.heal import HealResult
from harness_cli.delivery.push.rebase import PushResult, RebaseResult
from harness_cli.delivery.worktrees import Worktree
from harness_cli.errors import ServiceError
from harness_cli.logs import event
from harness_cli.outbox import notify
from harness_cli.outbox.outbound import Outbound
from harness_cli.workspace.registry import case_thread as lookup

log = logging.getLogger("harness.delivery.escalation")

STATUS_CHARS = 1500
ERROR_CHARS = 600
ITEM_CHARS = 200


def case_thread(case_id: str, channel: str) -> str | None:
    """The case's own thread in the operator's self-DM, when it has one."""

    entry = lookup(case_id)
    return entry.thread_ts if entry is not None and entry.channel == channel else None


def final_status(wt: Worktree) -> str:
    try:
        return wt.git().run("status", "--short", "--branch") or "(clean)"
    except ServiceError as exc:
        return f"(git status failed: {exc.message})"


def escalation_text(
    case_id: str,
    wt: Worktree,
    heal: HealResult | None,
    *,
    rebase: RebaseResult | None,
    status: str,
    last_error: str,
    trail_path: Path | None,
) -> str:
    if heal is None and last_error.startswith("refused"):
        why = "the harness refused the push (nothing reached origin)"
    elif heal is None:
        why = "L2 did not run"
    elif heal.bailed:
        last = heal.attempts[-1]
        why = f"L2 bailed at attempt {last.number} (confidence {last.confidence})"
    else:
        why = f"L2 used its {len(heal.attempts)} attempt(s); no real push exited 0"
    lines = [
        f":rotating_light: Push needs you — case {case_id}: {why}.",
        f"Branch `{wt.branch}` of {wt.project}, worktree `{wt.path}`.",
    ]
    if rebase is not None and not rebase.ok:
        lines.append(f"L1: {rebase.error}")
    for a in heal.attempts if heal else []:
        push = _push_label(a.push)
        plan = f"plan confidence {a.plan_confidence}; " if a.plan_confidence is not None else ""
        lines.append(
            f"• #{a.number}: {plan}confidence "
            f"{a.confidence if a.confidence is not None else 'none'}"
            f"{' (bail)' if a.bailed else ''}; said: {_cut(a.summary or '(no report)')}; "
            f"real push: {push}{f' — {_cut(a.note)}' if a.note else ''}"
        )
        if a.plan:
            lines.append(f"   plan: {_cut('; '.join(a.plan))}")
        if a.actions:
            lines.append(f"   actions it reported: {_cut('; '.join(a.actions))}")
        if a.tool_calls:
            lines.append(f"   what it ran: {_cut(' | '.join(a.tool_calls))}")
        if a.status_after and a.restored:
            status_then = _cut(" / ".join(a.status_after.splitlines()))
            lines.append(f"   left the tree as: {status_then} (kept at `{a.kept_at}`)")
    lines.append(f"Final `git status --short`:\n```\n{status[:STATUS_CHARS]}\n```")
    if last_error:
        lines.append(f"Last push error: `{last_error[:ERROR_CHARS]}`")
    if heal is not None and heal.backup_sha:
        lines.append(
            f"The branch as it was before L2: `{heal.backup_ref}` = {heal.backup_sha[:12]}"
        )
    if trail_path is not None:
        lines.append(f"Full trail: `{trail_path}`")
    return "\n".join(lines)


def escalate(
    outbound: Outbound,
    cfg: Config,
    *,
    case_id: str,
    wt: Worktree,
    heal: HealResult | None,
    rebase: RebaseResult | None = None,
    last_error: str = "",
    trail_path: Path | None = None,
) -> str:
    """L3: post ONE message to the operator's self-DM (in the case thread if there is one)
    with the whole trail; return its ts."""
    text = escalation_text(
        case_id,
        wt,
        heal,
        rebase=rebase,
        status=final_status(wt),
        last_error=last_error,
        trail_path=trail_path,
    )
    ts = notify.push_escalation(outbound, cfg, case_id=case_id, text=text)
    event(log, "push_escalated", logging.WARNING, case_id=case_id, branch=wt.branch, ts=ts)
    return ts


def _push_label(push: PushResult | None) -> str:
    if push is None:
        return "not run"
    if push.ok:
        return "pushed"
    return "refused by the harness" if push.refused else ("rejected" if push.rejected else "failed")


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ITEM_CHARS else text[: ITEM_CHARS - 1] + "…"
