"""Assemble an ``Intake`` from the config and the environment (the commands' one entry)."""

from __future__ import annotations

from harness_cli import dispatch
from harness_cli.config import load_config
from harness_cli.intake.context import Intake
from harness_cli.services import factory


def intake_context() -> Intake:
    cfg = load_config()
    slack = factory.slack()
    return Intake(
        cfg=cfg,
        slack=slack,
        out=factory.outbound(cfg, slack),
        backend=dispatch.choose_backend(cfg.harness.dispatch),
        budget_seconds=cfg.harness.thresholds.poll_cycle_budget_seconds,
        jira=factory.jira(),
    )


def local_context() -> Intake:
    """For commands run by the operator at a shell: Slack is connected only if a call needs
    it (pause, status and most admin commands need none)."""
    cfg = load_config()
    slack = factory.lazy_slack()
    return Intake(
        cfg=cfg,
        slack=slack,
        out=factory.outbound(cfg, slack),
        backend=dispatch.choose_backend(cfg.harness.dispatch),
        budget_seconds=cfg.harness.thresholds.poll_cycle_budget_seconds,
        jira=factory.jira(),
    )
