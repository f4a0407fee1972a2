"""What poll-slack (every minute) and mr-monitor (every ten) do for the obligations after their
own work: deliver what is owed, re-dispatch the workflow runs a kill left stranded (and the
payloads whose run never began), forget what is old. Each step is bounded and never fails
the cycle that runs it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from harness_cli.config import Config
from harness_cli.dispatch import dispatcher as dispatch
from harness_cli.dispatch import journal
from harness_cli.errors import HarnessError
from harness_cli.logs import event
from harness_cli.loop import outage
from harness_cli.outbox import flush, ledger
from harness_cli.workflows import adopt, unbegun

if TYPE_CHECKING:
    from harness_cli.dispatch.backends import BackendName
    from harness_cli.outbox.outbound import Outbound
    from harness_cli.services.gitlab import GitLab
    from harness_cli.services.jira import Jira

log = logging.getLogger("harness.obligations")


def tend(
    cfg: Config,
    out: Outbound | None,
    *,
    backend: BackendName,
    gitlab: GitLab | None = None,
    jira: Jira | None = None,
) -> list[str]:
    """Returns lines for the cycle's result."""

    lines: list[str] = []
    limits = cfg.harness.obligations
    try:
        report = flush.flush(
            out, self_dm=cfg.harness.operator.self_dm_channel, gitlab=gitlab, jira=jira
        )
        lines += report.lines()
    except HarnessError as exc:
        event(log, "owed_flush_failed", logging.WARNING, error=exc.line())
    try:
        lines += adopt.stranded_runs(cfg, out, backend=backend)
    except HarnessError as exc:
        event(log, "stranded_runs_failed", logging.WARNING, error=exc.line())
    try:
        lines += unbegun.unbegun_payloads(cfg, out, backend=backend)
    except HarnessError as exc:
        event(log, "unbegun_payloads_failed", logging.WARNING, error=exc.line())
    try:
        lines += outage.resume_due(backend)  # the cases a model outage left waiting
    except HarnessError as exc:
        event(log, "outage_resume_failed", logging.WARNING, error=exc.line())
    try:
        lines += dispatch.start_waiting(backend)  # runs waiting for a slot a dead run freed
    except HarnessError as exc:
        event(log, "start_waiting_failed", logging.WARNING, error=exc.line())
    ledger.prune_done(limits.outbox_keep_done_days)
    journal.prune(limits.outbox_keep_done_days)
    return lines
