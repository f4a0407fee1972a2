"""Assemble an ``Intake`` from the config and the environment (the commands' one entry)."""

from __future__ import annotations

from harness_cli import wiring
from harness_cli.config import load_config
from harness_cli.dispatch.backends import choose_backend
from harness_cli.intake.context import Intake


def intake_context() -> Intake:
    cfg = load_config()
    slack = wiring.slack()
    return Intake(
        cfg=cfg,
        slack=slack,
        out=wiring.outbound(cfg, slack),
        backend=choose_backend(cfg.harness.dispatch),
        budget_seconds=cfg.harness.thresholds.poll_cycle_budget_seconds,
        jira=wiring.jira(),
    )


def local_context() -> Intake:
    """For commands run by the operator at a shell: Slack is connected only if a call needs
    it (pause, status and most admin commands need none)."""
    cfg = load_config()
    slack = wiring.lazy_slack()
    return Intake(
        cfg=cfg,
        slack=slack,
        out=wiring.outbound(cfg, slack),
        backend=choose_backend(cfg.harness.dispatch),
        budget_seconds=cfg.harness.thresholds.poll_cycle_budget_seconds,
        jira=wiring.jira(),
    )
