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
    from harness_cli.agents.factory import build_runtime, runtime_name
    from harness_cli.config import load_config
    from harness_cli.delivery import dev_agent
    from harness_cli.services import factory
    from harness_cli.workspace import registry

    if mode not in MODES:
        raise InputError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    cfg = load_config()
    case = registry.load_case(case_id)
    if case.status not in RUNNABLE[mode]:
        raise PolicyRefused(
            f"case {case_id} is {case.status}; dev-agent {mode} does not run now",
            hint="approve it first (admin: task) or re-open it",
        )
    work = dev_agent.Work(
        cfg=cfg,
        case=case,
        case_dir=registry.case_dir(case_id),
        runtime=build_runtime(runtime_name(cfg.harness.runtime), model=cfg.harness.model),
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
    return runner(work)
