"""harness case new|list|show|register-thread|close|reopen|accept-checks|migrate — the case
registry by hand."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from harness_cli import paths, wiring
from harness_cli.commands import new_app
from harness_cli.config import all_jira_prefixes, extract_jira_key, load_config
from harness_cli.delivery.reopen import accept_checks as accept
from harness_cli.delivery.reopen import reopen_case
from harness_cli.errors import InputError
from harness_cli.improvement.retrospective import write_retrospective
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.state import files
from harness_cli.workspace import registry
from harness_cli.workspace.case import CaseStatus, derive_case_id
from harness_cli.workspace.migrate import migrate_workspace
from harness_cli.workspace.registry import case_dir, list_cases, load_case, update_case
from harness_cli.workspace.registry import register_thread as link

app = new_app("The case registry.", no_args_is_help=True)


@app.command("new")
def new(
    project: str = typer.Option(..., "--project", "-p", help="Project name from projects.yaml."),
    title: str = typer.Option(..., "--title", "-t", help="One-line title of the case."),
    case_id: str | None = typer.Option(None, "--id", help="Case id (default: Jira key or stamp)."),
    text: Path | None = typer.Option(
        None,
        "--text",
        help="File with the ticket text (e.g. a Jira description).",
        exists=True,
        dir_okay=False,
        readable=True,
    ),
    kind: str = typer.Option("oncall", "--kind", help="oncall (investigation) or task."),
) -> None:
    """Open a case by hand, e.g. from a Jira ticket."""

    cfg = load_config()
    if project not in cfg.projects.projects:
        raise InputError(
            f"unknown project {project!r}",
            hint=f"one of: {', '.join(cfg.projects.projects)} (agent-config/projects.yaml)",
        )
    if kind not in ("oncall", "task"):
        raise InputError(f"--kind {kind!r} is not oncall or task")
    body = text.read_text(encoding="utf-8") if text else title
    jira = extract_jira_key(f"{title}\n{body}", all_jira_prefixes(cfg.projects))
    cid = case_id or derive_case_id(jira=jira, channel=None, ts=None)
    opened = registry.open_case(
        cfg.harness.thresholds,
        case_id=cid,
        project=project,
        title=title,
        kind=kind,
        jira=jira,
        message={"text": body, "source": "manual"},
    )
    result = Result(
        "case new", data={"case_id": cid, "case_dir": str(opened.dir), "created": opened.created}
    )
    if opened.created:
        result.changed.append(f"opened case {cid} ({project}) in {opened.dir}")
    else:
        result.skipped.append(f"case {cid} already exists ({opened.case.status})")
    emit(result)


@app.command("list")
def list_(
    status: str | None = typer.Option(
        None,
        "--status",
        help="Only cases in this status: new, investigating, awaiting_approval, approved, "
        "in_progress, mr_open, merged, failed, escalated, closed.",
    ),
    project: str | None = typer.Option(None, "--project", "-p", help="Only this project."),
) -> None:
    """List cases, newest first."""
    from typing import get_args

    statuses = get_args(CaseStatus)
    if status is not None and status not in statuses:
        raise InputError(
            f"--status {status!r} is not a case status", hint=f"one of: {', '.join(statuses)}"
        )
    cases = list_cases(status=status, project=project, include_broken=True)
    result = Result("case list", data=cases, columns=["case", "project", "status", "title"])
    result.rows = [
        [str(c[k] if c[k] is not None else "") for k in ("id", "project", "status", "title")]
        for c in cases
    ]
    # An unreadable case.json is listed, and what is wrong with it said once, with the fix.
    result.errors += [c["problem"] for c in cases if c.get("problem")]
    if not cases:
        result.messages.append(f"no cases in {paths.cases_root()}")
    emit(result)


@app.command("show")
def show(case_id: str = typer.Argument(..., help="The case id.")) -> None:
    """Show one case: its record, files and threads."""

    case = load_case(case_id)
    folder = case_dir(case_id)
    threads = [t.model_dump() for t in files.thread_map(case.kind).read().for_case(case_id)]
    data = {
        **case.model_dump(mode="json", by_alias=True),
        "case_dir": str(folder),
        "files": sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()),
        "threads": threads,
    }
    result = Result("case show", data=data)
    result.messages.append(json.dumps(data, indent=2))
    if case.cost:
        per = ", ".join(
            f"{name} ${float(v.get('usd', 0)):.4f}"
            for name, v in sorted((case.cost.get("by_workflow") or {}).items())
        )
        result.messages.append(
            f"cost: ${float(case.cost.get('usd', 0)):.4f} · {int(case.cost.get('tokens', 0)):,} "
            f"tokens · {int(case.cost.get('calls', 0))} call(s)" + (f" ({per})" if per else "")
        )
    emit(result)


@app.command("register-thread")
def register_thread(
    case_id: str = typer.Argument(..., help="The case id."),
    channel: str = typer.Option(..., "--channel", help="Slack channel id of the thread."),
    thread_ts: str = typer.Option(..., "--thread-ts", help="ts of the thread's parent message."),
) -> None:
    """Link a Slack thread to a case by hand."""

    case = load_case(case_id)
    result = Result(
        "case register-thread",
        data={"case_id": case_id, "channel": channel, "thread_ts": thread_ts},
    )
    if link(case, channel=channel, thread_ts=thread_ts, role="manual"):
        result.changed.append(f"thread {channel}/{thread_ts} → case {case_id}")
    else:
        result.skipped.append(f"thread {channel}/{thread_ts} already linked to {case_id}")
    emit(result)


@app.command("close")
def close(
    case_id: str = typer.Argument(..., help="The case id."),
    reason: str = typer.Option("", "--reason", help="Why, for the case history."),
) -> None:
    """Mark a case finished: its threads stop being polled."""

    cfg = load_config()
    # Closing stops its threads' polling (registry.update_case, for every close path).
    with update_case(case_id, cfg.harness.thresholds, "closed") as case:
        moved = case.move("closed", by="operator", note=reason)
    closed_threads = sum(
        1
        for handle in (files.oncall_thread_map(), files.task_thread_map())
        for entry in handle.read().for_case(case_id)
        if entry.closed
    )
    if moved:
        write_retrospective(cfg, case_id, reason="case close")
    result = Result("case close", data={"case_id": case_id, "threads_closed": closed_threads})
    if moved:
        result.changed.append(f"closed case {case_id}")
    else:
        result.skipped.append(f"case {case_id} is already closed")
    emit(result)


@app.command("reopen")
def reopen(case_id: str = typer.Argument(..., help="The case id.")) -> None:
    """Put a failed, escalated, stuck or closed case back for approval (`admin: task` then
    runs the dev-agent again), or back to mr_open when its MR is still open."""

    done = reopen_case(load_config(), case_id)
    result = Result("case reopen", data={"case_id": case_id, "status": done.status})
    (result.changed if done.changed else result.skipped).append(done.message)
    emit(result)


@app.command("accept-checks")
def accept_checks(
    case_id: str = typer.Argument(..., help="The case id."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Say what would be accepted; change nothing."
    ),
) -> None:
    """Accept the change to the required checks in the case's newest acceptance run (the MR
    stays a draft without it); the checks run again and the MR follows their result."""

    changed, message = accept(load_config(), case_id, wiring.gitlab(), dry_run=dry_run)
    result = Result("case accept-checks", data={"case_id": case_id})
    (result.changed if changed else result.skipped).append(message)
    emit(result)


@app.command("migrate")
def migrate(
    to: Path = typer.Option(..., "--to", help="The new workspace root."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Report what would change."),
) -> None:
    """Move the workspace root and rewrite the absolute case paths in the thread maps."""

    done = migrate_workspace(paths.workspace(), to, dry_run=dry_run)
    result = Result(
        "case migrate",
        data={
            "old": str(done.old),
            "new": str(done.new),
            "moved": done.moved,
            "rewritten": done.rewritten,
            "dry_run": dry_run,
        },
    )
    verb = "would move" if dry_run else "moved"
    if done.moved:
        result.changed.append(f"{verb} {done.old} → {done.new}")
    for name, count in done.rewritten.items():
        result.changed.append(f"{name}: {count} path(s) {'to rewrite' if dry_run else 'rewritten'}")
    result.messages.append(f"now set HARNESS_WORKSPACE={done.new} for every cron line")
    emit(result)
