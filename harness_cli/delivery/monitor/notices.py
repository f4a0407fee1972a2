"""What mr-monitor says when a loop stops: the CI escalation and the review budget notice.

Each is said once per stop and names what the operator needs to act: the MR and its link, the
failing job and what each attempt did, or how many review rounds ran and when the next frees.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from harness_cli import clock
from harness_cli.delivery.monitor import decide as decide
from harness_cli.delivery.monitor.act import MonitorCtx, call, dm
from harness_cli.logs import event
from harness_cli.services.gitlab import MergeRequest
from harness_cli.state.models import MonitoredMr

log = logging.getLogger("harness.mr_monitor")

TRIED = {
    "no_change": "changed nothing",
    "pushed": "pushed a fix, still red",
    "push_failed": "could not push its fix",
    "failed": "failed",
}


def rearm_hint(key: str) -> str:
    return (
        f"Automatic fixes and replies on this MR are paused until you act: "
        f"`admin: mr resume {key}` (new failures are fixed again) or `admin: mr rescan {key}` "
        f"(one fresh attempt now)."
    )


def ci_escalation(
    ctx: MonitorCtx,
    key: str,
    w: MonitoredMr,
    mr: MergeRequest,
    pipeline: dict[str, Any],
    job_name: str,
    trace_file: str,
) -> str:
    """ "Three consecutive failures escalate to the operator": the MR, the failing job, what
    the agent tried each time (a fix that changed nothing included), the log's last lines."""
    job = job_name or next((a.job for a in reversed(w.fix_attempts) if a.job), "")
    lines = [
        f"{w.case_id} · {key}: CI is still red after "
        f"{len(w.fix_attempts) or w.fix_ci_attempts} fix attempt(s) in a row; I stopped "
        f"fixing it. {mr.web_url}",
        f"Failing job: `{job or '?'}` in pipeline #{int(pipeline.get('id') or 0)} on "
        f"{str(pipeline.get('sha'))[:8]}.",
        "What the agent tried:",
    ]
    for n, a in enumerate(w.fix_attempts, 1):
        did = TRIED.get(a.outcome, "no report")
        said = f" — “{a.summary[:200]}”" if a.summary else ""
        lines.append(
            f"{n}. pipeline #{a.pipeline_id} on {a.sha[:8]}: {did}{said} (log {a.trace_file})"
        )
    try:
        with open(trace_file, encoding="utf-8") as handle:
            log_tail = decide.tail(handle.read(), ctx.thresholds.trace_tail_lines)
    except OSError:
        log_tail = "(no log)"
    lines += [f"Last lines of {trace_file}:", f"```\n{log_tail}\n```", rearm_hint(key)]
    return "\n".join(lines)


def review_budget_spent(ctx: MonitorCtx, key: str, w: MonitoredMr, mr: MergeRequest) -> None:
    """Once per exhaustion: one note on the MR, one DM to the operator."""
    th = ctx.thresholds
    rounds = decide.rounds_in_window(w, clock.now(), th.review_round_window_hours)
    frees = rounds[0] + timedelta(hours=th.review_round_window_hours) if rounds else clock.now()
    window = f"{th.review_round_window_hours:g} h"
    note = (
        f"I have answered {len(rounds)} review rounds on this MR in the last {window}, the "
        "budget this harness is given. I will not reply here again for now; the engineer who "
        "runs it has been told and will take it from here."
    )
    call(ctx, lambda: ctx.gitlab.note(mr.project, mr.iid, note))
    dm(
        ctx,
        w.case_id,
        f"{w.case_id} · {key}: the review round budget is spent ({len(rounds)} rounds in "
        f"{window}); I stopped answering reviewers there and said so once on the MR. "
        f"{mr.web_url}\nNew notes are held, not dropped: they are answered when a round frees "
        f"up ({frees:%Y-%m-%d %H:%M} UTC) or on `admin: mr rescan {key}`.",
    )
    event(log, "review_budget_spent", logging.WARNING, mr=key, rounds=len(rounds))
