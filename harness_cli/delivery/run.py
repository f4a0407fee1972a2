"""The dev-agent workflow end to end: payload → services → the mode's pipeline."""

from __future__ import annotations

from typing import Any

from harness_cli.errors import InputError, PolicyRefused

MODES = ("task", "address_review", "fix_ci")
RUNNABLE = {
    "task": ("approved", "in_progress", "failed", "escalated"),
    "fix_ci": ("mr_open", "in_progress", "escalated"),
    "address_review": ("mr_open", "in_progress", "escalated"),
}
"""Statuses from which each mode may start: a late dispatch never tramples a closed case."""


def run_dev_agent(
    case_id: str, mode: str, args: dict[str, Any], *, post: bool = True
) -> dict[str, Any]:
    from harness_cli.agents.factory import configured_runtime
    from harness_cli.config import load_config
    from harness_cli.delivery import dev_agent
    from harness_cli.ops import status_message
    from harness_cli.services import factory
    from harness_cli.workspace import registry

    if mode not in MODES:
        raise InputError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    cfg = load_config()
    case = registry.load_case(case_id)
    if case.status not in RUNNABLE[mode] and not _watched_mr(case_id, args):
        raise PolicyRefused(
            f"case {case_id} is {case.status}; dev-agent {mode} does not run now",
            hint="approve it first (admin: task) or re-open it",
        )
    work = dev_agent.Work(
        cfg=cfg,
        case=case,
        case_dir=registry.case_dir(case_id),
        runtime=configured_runtime(cfg),
        gitlab=factory.gitlab(),
        out=factory.outbound(cfg, factory.lazy_slack()),
        args={**args, "mode": mode},
        quiet=not post,
    )
    runner = {
        "task": dev_agent.run_task,
        "fix_ci": dev_agent.run_fix_ci,
        "address_review": dev_agent.run_address_review,
    }[mode]
    work.status = (
        status_message.for_case(cfg, work.out, case_id, f"dev-agent {mode} {case_id}")
        if post
        else None
    )
    try:
        result = runner(work)
    except BaseException as exc:
        if work.status is not None:
            work.status.failed(status_message.reason(exc))
        raise
    if work.status is not None:
        state = str(result.get("state") or "").replace("_", " ")
        work.status.done(state or _outcome(result))
    return result


def _outcome(result: dict[str, Any]) -> str:
    if result.get("mr"):
        return f"MR {result['mr'].get('web_url', '')}"
    if result.get("changed") is False:
        return "nothing changed, nothing pushed"
    return "pushed" if result.get("pushed") else "not pushed"


def _watched_mr(case_id: str, args: dict[str, Any]) -> bool:
    """An MR the harness still monitors for this case may be repaired whatever the ticket's
    own status — e.g. finalize's improvement MR against the harness repo (pr-ci-fixer), whose
    case was closed long before."""
    from harness_cli.state import files

    entry = files.monitored_mrs().read().mrs.get(str(args.get("mr", "")))
    return entry is not None and entry.case_id == case_id and entry.state == "opened"
