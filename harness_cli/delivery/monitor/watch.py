"""mr-monitor's two cheap listings beside the MR listing: what touches no MR but matters.

- Pipelines: "a pipeline re-run on an unchanged MR goes unseen for up to 6 h" — a new pipeline
  on the same sha, a retry, a pipeline that finished change nothing on the MR. One listing per
  project of the pipelines changed since its own cursor names the MRs to examine.
- Target branches: a teammate's push to ``main`` that touches the MR's lines makes it
  ``conflict`` without touching it either. One call per target branch reads its head; when it
  moved, one listing of the open MRs targeting it (``with_merge_status_recheck``) names those
  whose merge status changed.

Both remember what they saw (:func:`settle`) only after every MR they named was examined.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial

from harness_cli.delivery.monitor import decide as decide
from harness_cli.delivery.monitor.act import Gone, MonitorCtx, call
from harness_cli.state import files
from harness_cli.state.models import MonitoredMr


def parse_stamp(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC)


def format_stamp(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass
class Found:
    """MRs one extra listing says must be examined, and what to remember once they were."""

    keys: list[str] = field(default_factory=list)
    cursor: str | None = None
    listed: list[str] = field(default_factory=list)
    """``updated_at`` of every pipeline listed (the pipeline cursor moves over them)."""
    heads: dict[str, str] = field(default_factory=dict)
    """``<project> <branch>`` → the target head to remember."""


def pipelines_changed(
    ctx: MonitorCtx,
    project: str,
    entries: dict[str, MonitoredMr],
    skip: set[str],
    mr_cursor: str | None,
) -> Found:
    """The pipelines changed since the project's pipeline cursor, mapped to their MRs."""
    state = files.monitored_mrs().read()
    cursor = state.pipeline_cursors.get(project) or mr_cursor
    found = Found(cursor=cursor)
    if cursor is None:
        return found  # nothing was examined yet: every MR is read as new anyway
    pipelines = call(ctx, lambda: ctx.gitlab.pipelines(project, updated_after=cursor))
    found.listed = [str(p.get("updated_at")) for p in pipelines if p.get("updated_at")]
    rest = [(k, e) for k, e in entries.items() if k not in skip and e.state == "opened"]
    found.keys = decide.touched_by_pipelines(rest, pipelines)
    return found


def targets_moved(
    ctx: MonitorCtx, project: str, entries: dict[str, MonitoredMr], skip: set[str]
) -> Found:
    """Open MRs whose merge status moved because their target branch moved."""
    found = Found()
    known = files.monitored_mrs().read().target_heads
    by_iid = {e.iid: k for k, e in entries.items() if k not in skip and e.state == "opened"}
    for target in sorted({e.target_branch for e in entries.values() if e.target_branch}):
        name = f"{project} {target}"
        try:
            head = call(ctx, partial(ctx.gitlab.branch_head, project, target))
        except Gone:
            continue  # the target branch is gone: the MRs' own examination says so
        found.heads[name] = head
        if known.get(name) == head or not by_iid:
            continue
        listing = partial(
            ctx.gitlab.list_mrs, project, state="opened", target_branch=target, recheck=True
        )
        listed = call(ctx, listing)
        for mr in listed:
            key = by_iid.get(mr.iid)
            entry = entries.get(key or "")
            if (
                key
                and entry
                and (mr.detailed_merge_status != entry.merge_status or mr.has_conflicts)
            ):
                found.keys.append(key)
    return found


def settle(project: str, pipes: Found, targets: Found, lag: float) -> None:
    """The pipeline cursor and the target heads move only once every MR they named was
    examined (the same rule as the MR cursor)."""
    with files.monitored_mrs().update() as state:
        state.target_heads.update(targets.heads)
        if pipes.cursor is None:
            return
        stamps = [parse_stamp(s) for s in pipes.listed]
        newest = max(stamps) - timedelta(seconds=lag) if stamps else None
        old = parse_stamp(pipes.cursor)
        state.pipeline_cursors[project] = format_stamp(max(old, newest) if newest else old)
